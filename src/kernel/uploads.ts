/**
 * File uploads for routes that take `multipart/form-data` (audio to transcribe, images to edit). A route declares
 * which file fields it takes and how large they may be; the server writes each file to a temporary path, hands the
 * handler its text fields (validated by the route's `body` schema) and its files, and removes the files once the
 * response is over, whether it succeeded, failed or the client went away.
 */
export interface MultipartOptions {
  /** Largest file accepted, in bytes; a larger one is answered 413 naming the limit. */
  maxFileBytes: number
  /** Largest total of all files of one request; `maxFileBytes` times the number of file fields unless given. */
  maxTotalBytes?: number
  /** The file fields the route takes, by name; any other is a 400, and so is a required one that is missing. */
  files: Record<string, {required?: boolean; description?: string}>
}

export interface UploadedFile {
  /** Where the upload was written; removed after the response, so read it (or copy it) before that. */
  path: string
  /** The name the client gave the file, when it gave one. */
  name?: string
  /** The media type the client gave, when it gave one. */
  type?: string
  size: number
}

/** A multipart request's files, by field; each field may carry several. Empty for a route that takes none. */
export type UploadedFiles = Record<string, UploadedFile[]>
