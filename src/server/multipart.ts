/**
 * The body parser of routes that declare `multipart` (kernel/uploads.ts): koa-body's multipart mode, which is
 * formidable, enabled for those routes only. Files go to temporary paths and are removed once the response is over,
 * whatever its outcome; formidable's refusals become the service's 400 and 413 answers.
 */
import type Koa from 'koa'
import type {Readable} from 'node:stream'

import {chmod, mkdir, mkdtemp, unlink} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import type {RouteDefinition} from '../kernel/contracts.js'
import type {JsonSchema} from '../kernel/schema.js'
import type {UploadedFile, UploadedFiles} from '../kernel/uploads.js'

import {badRequest, ServiceError} from '../kernel/errors.js'
import {PRIVATE_FOLDER} from '../kernel/private-home.js'

/** formidable's error codes (formidable/src/FormidableError.js) for a body over a limit. */
const TOO_LARGE = new Set([1006, 1007, 1009, 1015, 1016])
/** formidable's `noEmptyFiles`. */
const EMPTY_FILE = 1010

interface FormidableFile {
  filepath: string
  originalFilename?: string | null
  mimetype?: string | null
  size: number
}

const megabytes = (bytes: number) => (bytes >= 1024 * 1024 ? `${+(bytes / 1024 / 1024).toFixed(1)} MiB` : bytes >= 1024 ? `${+(bytes / 1024).toFixed(1)} KiB` : `${bytes} bytes`)

let koaBodyModule: Promise<typeof import('koa-body')> | undefined

/** Where a route's handler finds the request's files. */
export const filesOf = (ctx: Koa.Context): UploadedFiles => (ctx.state as {files?: UploadedFiles}).files ?? {}

function refusal(error: unknown, route: RouteDefinition, maxTotalBytes: number): ServiceError {
  if (error instanceof ServiceError) return error
  const {code, message} = error as {code?: number; message?: string}
  const {maxFileBytes} = route.multipart!
  if (code === 1016) return new ServiceError(413, 'invalid_request', `an uploaded file is larger than the ${megabytes(maxFileBytes)} (${maxFileBytes} bytes) limit of ${route.method} ${route.path}.`)
  // formidable counts the total as the bytes arrive but a file's size only at its end, so either limit may be the one passed.
  if (code === 1009)
    return new ServiceError(413, 'invalid_request', `the uploaded files are over the limits of ${route.method} ${route.path}: ${megabytes(maxFileBytes)} (${maxFileBytes} bytes) a file, ${megabytes(maxTotalBytes)} (${maxTotalBytes} bytes) in all.`)
  // formidable refuses an empty file itself; a route with one file field can say which field was empty.
  if (code === EMPTY_FILE) {
    const fields = Object.keys(route.multipart!.files)
    return badRequest(`${fields.length === 1 ? `\`${fields[0]}\` is` : 'an uploaded file is'} empty; send a file with content.`, fields.length === 1 ? fields[0] : undefined)
  }

  if (code !== undefined && TOO_LARGE.has(code)) return new ServiceError(413, 'invalid_request', `the request body is over a limit of ${route.method} ${route.path}: ${message}`)
  return badRequest(`the request body is not valid multipart/form-data: ${message ?? error}`)
}

/** The OpenAPI schema of a multipart route's body: its text fields as its `body` schema has them, and its files. */
export function multipartSchema(route: RouteDefinition): JsonSchema {
  const fields = (route.body?.json ?? {properties: {}}) as {properties?: Record<string, unknown>; required?: string[]}
  const files = Object.entries(route.multipart!.files)
  return {
    properties: {...fields.properties, ...Object.fromEntries(files.map(([name, {description}]) => [name, {description, format: 'binary', type: 'string'}]))},
    required: [...(fields.required ?? []), ...files.filter(([, {required}]) => required).map(([name]) => name)],
    type: 'object',
  }
}

/** The request's files by field; a field the route does not take, or a required one missing, is a 400 naming it. */
function checkFiles(route: RouteDefinition, files: Record<string, FormidableFile | FormidableFile[]>): UploadedFiles {
  const declared = route.multipart!.files
  const uploaded: UploadedFiles = {}
  for (const [field, value] of Object.entries(files)) {
    if (!declared[field]) throw badRequest(`\`${field}\` is not a file field of ${route.method} ${route.path}; it takes ${Object.keys(declared).join(', ')}.`, field)
    uploaded[field] = (Array.isArray(value) ? value : [value]).map(
      (file): UploadedFile => ({name: file.originalFilename ?? undefined, path: file.filepath, size: file.size, type: file.mimetype ?? undefined}),
    )
  }

  for (const [field, {required}] of Object.entries(declared))
    if (required && !uploaded[field]) throw badRequest(`\`${field}\` is required: send the file as a multipart/form-data part named ${field}.`, field)
  return uploaded
}

/** A part of a multipart body as formidable hands it over: a text field has no media type. */
interface FormidablePart extends Readable {
  name?: string | null
  mimetype?: string | null
  originalFilename?: string | null
}

/** Longer than any model uid: a `model` field past it is left to the route's own check. */
const MODEL_FIELD_BYTES = 1024

/**
 * The folder uploads are written to, only the service's user may list: the one given (the service's, under
 * SERVICE_HOME), else a new one of its own in the system's temporary folder rather than that shared folder itself.
 */
async function privateUploadFolder(given: string | undefined): Promise<string> {
  if (!given) return mkdtemp(join(tmpdir(), 'service-uploads-'))
  await mkdir(given, {mode: PRIVATE_FOLDER, recursive: true})
  // One left by an earlier version keeps its mode through mkdir.
  await chmod(given, PRIVATE_FOLDER)
  return given
}

/**
 * Parses a multipart route's body into `ctx.request.body` (text fields) and the files `filesOf` gives. koa-body is
 * loaded by the first upload, as the JSON parser is by the first JSON body.
 *
 * `checkModel` hears of the `model` field as soon as it has arrived: clients send their text fields before their files
 * (OpenAI's and Xinference's do), so a request for a model that is not running is answered then, without writing its
 * files anywhere.
 */
export function parseMultipart(route: RouteDefinition, uploadFolder?: string, checkModel?: (ctx: Koa.Context, uid: string) => void): Koa.Middleware {
  const {files, maxFileBytes, maxTotalBytes = maxFileBytes * Object.keys(files).length} = route.multipart!
  let folder: Promise<string> | undefined
  return async (ctx, next) => {
    if (!ctx.is('multipart'))
      throw badRequest(`${route.method} ${route.path} takes multipart/form-data (files in ${Object.keys(files).join(', ')}); this request sent ${ctx.get('content-type') || 'no Content-Type'}.`)
    const written = new Set<string>()
    let over = false
    const removeAll = () => Promise.all([...written].map((path) => unlink(path).catch(() => {})))
    // 'close' comes after the response is sent or the client went away, streamed replies included; files begun
    // after it (a client that left mid-upload) are removed once the parser gives up.
    ctx.res.once('close', () => {
      over = true
      void removeAll()
    })
    let refuse: (error: unknown) => void = () => {}
    const refused = new Promise<never>((_resolve, reject) => (refuse = reject))
    refused.catch(() => {})
    const onPart = (part: FormidablePart, delegate: (part: FormidablePart) => void) => {
      // A part is a file by its filename (RFC 7578 §4.2); a text field may still carry `Content-Type: text/plain`, as
      // aiohttp's FormData (Xinference's async client) writes every field, and formidable would take it for a file.
      if (part.originalFilename === null) part.mimetype = null
      if (checkModel && !part.mimetype && part.name === 'model') {
        const chunks: Buffer[] = []
        let size = 0
        part.on('data', (chunk: Buffer) => (size += chunk.length) <= MODEL_FIELD_BYTES && chunks.push(chunk))
        part.on('end', () => {
          const uid = Buffer.concat(chunks).toString()
          try {
            if (uid !== '' && size <= MODEL_FIELD_BYTES) checkModel(ctx, uid)
          } catch (error) {
            // The rest of the body is read and dropped rather than written to disk; closing the connection instead
            // would end a client's upload with EPIPE before it could read the answer.
            ctx.req.removeAllListeners('data')
            ctx.req.resume()
            refuse(error)
          }
        })
      }

      delegate(part)
    }

    // Made per request, since the file list its onFileBegin fills is this request's.
    const uploadDir = await (folder ??= privateUploadFolder(uploadFolder))
    const parse = (await (koaBodyModule ??= import('koa-body'))).koaBody({
      formidable: {
        maxFileSize: maxFileBytes,
        maxTotalFileSize: maxTotalBytes,
        onFileBegin: (_name: string, file: {filepath: string}) => written.add(file.filepath),
        onPart: onPart as never,
        uploadDir,
      },
      json: false,
      multipart: true,
      text: false,
      urlencoded: false,
    })
    try {
      const parsing = parse(ctx, async () => {})
      // Refused early, the parse is left to fail at the body's end, which it no longer sees whole.
      parsing.catch(() => {})
      await Promise.race([parsing, refused])
    } catch (error) {
      await removeAll()
      throw refusal(error, route, maxTotalBytes)
    } finally {
      if (over) await removeAll()
    }

    // A form sends every field it shows, one left empty as '' (an HTML form, /docs "Try it out"): a field not given.
    const fields = ctx.request.body as Record<string, unknown> | undefined
    if (fields) ctx.request.body = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== '')) as typeof ctx.request.body
    try {
      ;(ctx.state as {files?: UploadedFiles}).files = checkFiles(route, (ctx.request as {files?: Record<string, FormidableFile | FormidableFile[]>}).files ?? {})
      await next()
    } catch (error) {
      await removeAll()
      throw error
    }

    // A reply already whole no longer needs the files, so they are gone before it is sent; a streamed one may
    // still read them, and 'close' removes them after it.
    if (typeof (ctx.body as {pipe?: unknown} | undefined)?.pipe !== 'function') await removeAll()
  }
}
