/**
 * Splits long audio into windows of at most 30 s (what Whisper reads at once), each ending at the quietest moment of
 * its last seconds, so that a word is rarely cut in two. The engine transcribes one window at a time: segments reach
 * the client as each window is done, and a client that goes away stops the work at the next window, which the
 * binding's own `stop()` cannot do inside one (it only discards the result).
 */

/** Whisper's window, in seconds. */
export const WINDOW_SECONDS = 30
/** How far back from a window's end the cut may move to find silence. */
const SEARCH_SECONDS = 5
/** The cut is placed on the quietest frame of this length. */
const FRAME_SECONDS = 0.02

/** Sample offsets [start, end) of each window of `samples` 16-bit samples at `sampleRate`. */
export function windowsOf(samples: Int16Array, sampleRate: number): Array<[number, number]> {
  const window = WINDOW_SECONDS * sampleRate
  const frame = Math.round(FRAME_SECONDS * sampleRate)
  const windows: Array<[number, number]> = []
  let start = 0
  while (start < samples.length) {
    if (samples.length - start <= window) {
      windows.push([start, samples.length])
      break
    }

    let cut = start + window
    let quietest = Number.POSITIVE_INFINITY
    for (let frameStart = start + window - SEARCH_SECONDS * sampleRate; frameStart + frame <= start + window; frameStart += frame) {
      let energy = 0
      for (let i = frameStart; i < frameStart + frame; i++) energy += samples[i] * samples[i]
      if (energy < quietest) {
        quietest = energy
        cut = frameStart + Math.floor(frame / 2)
      }
    }

    windows.push([start, cut])
    start = cut
  }

  return windows
}
