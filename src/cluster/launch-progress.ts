/**
 * A launch's progress as `GET /v1/models/{uid}/progress` reports it, folded from the steps a worker sends: it
 * only moves forward, and a launch that downloads counts the download as most of the way.
 */
import type {ServiceError} from '../kernel/errors.js'
import type {LaunchProgress} from '../protocol/launch.js'
import type {LaunchStep} from '../protocol/worker.js'

/** Of a launch that downloads, the share of its progress that is the download; loading is the rest. */
const DOWNLOAD_SHARE = 0.9

/** A launch's progress and whether it has downloaded, which decides how loading counts. */
export interface LaunchTrack {
  progress: LaunchProgress
  downloaded: boolean
}

/** Folds a worker's step into the launch's progress, which only moves forward. */
export function advance(track: LaunchTrack, step: LaunchStep): void {
  const {progress} = track
  let fraction: number
  if (step.stage === 'downloading') {
    if (progress.stage !== 'pending' && progress.stage !== 'downloading') return
    const {download} = step
    track.downloaded = true
    Object.assign(progress, {
      downloaded_bytes: download.downloadedBytes,
      files: download.files.map((file) => ({downloaded_bytes: file.downloadedBytes, name: file.name, total_bytes: file.totalBytes})),
      hub: download.hub,
      repo: download.repo,
      stage: 'downloading',
      total_bytes: download.totalBytes,
    })
    fraction = download.totalBytes > 0 ? (DOWNLOAD_SHARE * download.downloadedBytes) / download.totalBytes : 0
  } else if (step.stage === 'generating') {
    if (progress.stage !== 'pending') return
    progress.stage = 'generating'
    fraction = 0
  } else if (step.stage === 'installing') {
    if (progress.stage === 'loading') return
    progress.stage = 'installing'
    fraction = track.downloaded ? DOWNLOAD_SHARE : 0
  } else {
    progress.stage = 'loading'
    fraction = track.downloaded ? DOWNLOAD_SHARE + (1 - DOWNLOAD_SHARE) * step.fraction : step.fraction
  }

  // 1 means ready, which only the end of the launch says.
  progress.progress = Math.max(progress.progress, Math.min(fraction, 0.999))
}

/** A model's progress once it has failed: the stage says so, with why. */
export function failedProgress(progress: LaunchProgress, error: ServiceError): LaunchProgress {
  return {...progress, error: {code: error.code, message: error.message, status: error.status}, stage: 'error'}
}
