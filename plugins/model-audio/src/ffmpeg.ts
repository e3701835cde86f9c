/**
 * Decoding uploads and encoding speech with FFmpeg's command-line program (Debian's `ffmpeg`), driven through execa:
 * one maintained decoder for every container and codec a client may send (wav, mp3, flac, ogg/opus, m4a/aac, webm,
 * and more), and the encoder of every `response_format` OpenAI's speech route offers. It runs as a child process, so
 * a broken file never takes the service down, and the route's abort signal kills it.
 */
import type {KernelApi} from 'service-toolkit'

/** What the transcription routes decode to: Whisper's input, 16 kHz mono 16-bit PCM. */
export const PCM_RATE = 16_000
const BYTES_PER_SECOND = PCM_RATE * 2

/** The containers we name to a person whose file could not be read; FFmpeg reads many more. */
export const AUDIO_FORMATS = 'flac, m4a, mp3, mp4, mpeg, mpga, oga, ogg, wav or webm'

/**
 * The containers FFmpeg may read an upload as: audio formats only, by demuxer (`mov` reads m4a and mp4, `matroska`
 * webm, `mpeg` mpeg and mpga streams). Left to detect any format, it would follow an uploaded playlist or concat list
 * (`ffconcat version 1.0`) to other files on the service's machine.
 */
const UPLOAD_DEMUXERS = 'aac,aiff,caf,flac,matroska,mov,mp3,mpeg,ogg,w64,wav'

/** OpenAI's shortest transcription; Whisper cannot tell the language of less (whisper.cpp fails the window). */
const MIN_SECONDS = 0.1

/** FFmpeg's program, looked up on PATH. */
export const FFMPEG = 'ffmpeg'

/** The error of a route that found no FFmpeg; `purpose` says what the route needed it for. */
export const missingProgram = (api: KernelApi, purpose: string) =>
  api.errors.create(500, 'internal_error', `${purpose} needs FFmpeg's \`ffmpeg\` program, which is not installed on the service's machine: install it there (Debian, Ubuntu: apt install ffmpeg).`)

/** FFmpeg's own reason, without its banner and paths: the last line it printed. */
const reasonOf = (stderr: string) => stderr.trim().split('\n').at(-1)?.replace(/^.*?: /, '') ?? 'unknown error'

/**
 * The audio of the file at `path` as 16 kHz mono s16le PCM. A file FFmpeg cannot read, one with no audio, and one
 * longer than `maxSeconds` are 400s naming `file` and, for the last, the limit.
 */
export async function decodeUpload(api: KernelApi, path: string, maxSeconds: number, signal: AbortSignal): Promise<Buffer> {
  const {execa} = await import('execa')
  // One second past the limit is enough to tell a file over it from one exactly at it, without decoding the rest.
  const args = ['-nostdin', '-hide_banner', '-loglevel', 'error', '-format_whitelist', UPLOAD_DEMUXERS, '-i', path, '-t', String(maxSeconds + 1), '-vn', '-ac', '1', '-ar', String(PCM_RATE), '-f', 's16le', 'pipe:1']
  const result = await execa(FFMPEG, args, {cancelSignal: signal, encoding: 'buffer', maxBuffer: (maxSeconds + 2) * BYTES_PER_SECOND, reject: false})
  signal.throwIfAborted()
  if ((result as {code?: string}).code === 'ENOENT') throw missingProgram(api, 'decoding `file`')
  if (result.exitCode !== 0)
    throw api.errors.badRequest(`\`file\` could not be decoded as audio (${reasonOf(Buffer.from(result.stderr).toString())}); send ${AUDIO_FORMATS}.`, 'file')
  const pcm = Buffer.from(result.stdout)
  if (pcm.length < 2) throw api.errors.badRequest('`file` holds no audio to transcribe: it decoded to no samples.', 'file')
  if (pcm.length < MIN_SECONDS * BYTES_PER_SECOND)
    throw api.errors.badRequest(`\`file\` is ${Math.round((pcm.length / BYTES_PER_SECOND) * 1000)} ms of audio; the shortest this service transcribes is ${MIN_SECONDS * 1000} ms.`, 'file')
  if (pcm.length > maxSeconds * BYTES_PER_SECOND)
    throw api.errors.badRequest(`\`file\` is longer than the ${maxSeconds} s this service transcribes at once (SERVICE_AUDIO_MAX_SECONDS); split it into shorter files.`, 'file')
  return pcm
}
