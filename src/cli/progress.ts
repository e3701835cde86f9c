/**
 * How `servicectl launch` shows a launch in progress. On a terminal: one line redrawn in place with a bar,
 * bytes, speed and time left while downloading, and a bar while loading. Elsewhere (a pipe, a log file):
 * plain lines when the download starts, at every tenth of it, and when it ends, and a line when the engine's
 * Python environment is being made; loading a cached model prints nothing, so scripts see only the final
 * `Model uid:` line.
 */
import type {LaunchProgress} from '../protocol/launch.js'

import {formatBytes, formatDuration} from '../util/format.js'

export interface ProgressView {
  update(progress: LaunchProgress): void
  /** Clears the line (on a terminal) so that something else can be written. */
  pause(): void
  resume(): void
  /** Leaves the line as it is and stops drawing. */
  finish(): void
}

export interface ProgressViewOptions {
  write(text: string): void
  tty: boolean
  columns?: number
  now?: () => number
}

/** Download speed over the last few seconds, so the estimate follows the link rather than its history. */
class Speedometer {
  private readonly samples: Array<{at: number; bytes: number}> = []

  constructor(private readonly windowMs = 5000) {}

  add(at: number, bytes: number): number | undefined {
    this.samples.push({at, bytes})
    while (this.samples.length > 2 && at - this.samples[0].at > this.windowMs) this.samples.shift()
    const first = this.samples[0]
    const seconds = (at - first.at) / 1000
    return seconds >= 0.5 ? (bytes - first.bytes) / seconds : undefined
  }
}

function bar(fraction: number, width: number): string {
  const filled = Math.round(Math.max(0, Math.min(1, fraction)) * width)
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`
}

export function createProgressView({columns = 80, now = () => performance.now(), tty, write}: ProgressViewOptions): ProgressView {
  const speed = new Speedometer()
  let paused = false
  let finished = false
  let drawn = ''
  let lastTenth = -1
  let downloadStarted = 0

  const line = (progress: LaunchProgress, rate: number | undefined): string => {
    const percent = (fraction: number) => `${Math.floor(fraction * 100)}%`.padStart(4)
    if (progress.stage === 'downloading') {
      const fraction = progress.total_bytes > 0 ? progress.downloaded_bytes / progress.total_bytes : 0
      const eta = rate && rate > 0 ? `  ETA ${formatDuration((progress.total_bytes - progress.downloaded_bytes) / rate)}` : ''
      const text = `${formatBytes(progress.downloaded_bytes)} / ${formatBytes(progress.total_bytes)}${rate ? `  ${formatBytes(rate)}/s` : ''}${eta}`
      return `Downloading ${bar(fraction, Math.max(10, Math.min(30, columns - text.length - 20)))} ${percent(fraction)}  ${text}`
    }

    const label = {generating: 'Generating', installing: 'Installing', loading: 'Loading', ready: 'Ready'}[progress.stage as string] ?? 'Starting'
    return `${label.padEnd(11)} ${bar(progress.progress, Math.max(10, Math.min(30, columns - 20)))} ${percent(progress.progress)}`
  }

  /** Lines for a log: a download is announced and concluded even when polling never caught it in progress. */
  let announced = false
  let concluded = false
  let installAnnounced = false
  const plain = (progress: LaunchProgress, rate: number | undefined) => {
    if (progress.total_bytes === 0 || concluded) return
    if (!announced) {
      announced = true
      downloadStarted = now()
      const files = progress.files.length === 1 ? progress.files[0].name : `${progress.files.length} files`
      write(`Downloading ${files} (${formatBytes(progress.total_bytes)}) from ${progress.hub} ${progress.repo}.\n`)
    }

    if (progress.stage !== 'downloading') {
      concluded = true
      if (progress.stage !== 'error' && progress.stage !== 'cancelled') write(`Downloaded ${formatBytes(progress.total_bytes)} in ${formatDuration((now() - downloadStarted) / 1000)}.\n`)
      return
    }

    const tenth = Math.floor((10 * progress.downloaded_bytes) / progress.total_bytes)
    if (tenth > lastTenth && tenth > 0 && tenth < 10) write(`  ${tenth * 10}% (${formatBytes(progress.downloaded_bytes)}${rate ? `, ${formatBytes(rate)}/s` : ''})\n`)
    lastTenth = Math.max(lastTenth, tenth)
  }

  return {
    finish() {
      if (tty && drawn && !finished) write('\n')
      finished = true
    },
    pause() {
      if (tty && drawn) write('\r\u001B[2K')
      drawn = ''
      paused = true
    },
    resume() {
      paused = false
    },
    update(progress) {
      if (finished) return
      const rate = progress.stage === 'downloading' ? speed.add(now(), progress.downloaded_bytes) : undefined
      if (!tty && progress.stage === 'installing' && !installAnnounced) {
        installAnnounced = true
        write("Creating the engine's Python environment; later launches that need the same packages reuse it.\n")
      }

      if (!tty) plain(progress, rate)
      else if (!paused && (progress.stage === 'downloading' || progress.stage === 'generating' || progress.stage === 'installing' || progress.stage === 'loading' || drawn)) {
        drawn = line(progress, rate)
        write(`\r\u001B[2K${drawn}`)
      }
    },
  }
}
