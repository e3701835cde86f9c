/** A launch's live progress: stage, bytes, speed and time left, from `GET /v1/models/{uid}/progress`; cancel while it lasts. */
import {useEffect, useRef, useState} from 'preact/hooks'

import type {LaunchProgress} from '../../../src/protocol/launch.js'

import {client, describeError} from '../api.js'
import {ErrorLine, formatBytes, formatSeconds, useAction} from '../ui.js'

const POLL_MS = 500

export function LaunchProgressView({onDone, uid}: {uid: string; onDone: () => void}) {
  const [progress, setProgress] = useState<LaunchProgress | undefined>(undefined)
  const [speed, setSpeed] = useState(0)
  const [error, setError] = useState<string | undefined>(undefined)
  const cancel = useAction()
  const last = useRef<{at: number; bytes: number} | undefined>(undefined)

  useEffect(() => {
    let stopped = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const poll = async () => {
      try {
        const answer = await client.progress(uid)
        if (stopped) return
        const now = performance.now()
        if (last.current && now > last.current.at) {
          const rate = ((answer.downloaded_bytes - last.current.bytes) * 1000) / (now - last.current.at)
          // A moving average: one slow poll does not make the time left jump.
          setSpeed((previous) => (previous ? previous * 0.7 + rate * 0.3 : rate))
        }

        last.current = {at: now, bytes: answer.downloaded_bytes}
        setProgress(answer)
        setError(undefined)
        if (answer.stage === 'ready' || answer.error) return
      } catch (failure) {
        if (stopped) return
        setError(describeError(failure))
        // A refusal (the launch is unknown, the login has expired) is final; an unreachable service is asked again.
        const status = (failure as {status?: number}).status
        if (status !== undefined && status >= 400 && status < 500) return
      }

      timer = setTimeout(poll, POLL_MS)
    }

    void poll()
    return () => {
      stopped = true
      clearTimeout(timer)
    }
  }, [uid])

  const stage = progress?.stage ?? 'pending'
  const finished = stage === 'ready' || stage === 'error' || stage === 'cancelled'
  const downloading = stage === 'downloading' && progress && progress.total_bytes > 0
  return (
    <div aria-live="polite" class="progress" role="status">
      <p>
        <strong>{uid}</strong>: <span data-stage={stage}>{stage}</span>
      </p>
      <progress aria-label={`Launch of ${uid}`} max={1} value={progress?.progress ?? 0} />
      {downloading && (
        <p class="muted">
          {formatBytes(progress.downloaded_bytes)} of {formatBytes(progress.total_bytes)} · {formatBytes(speed)}/s · {formatSeconds(speed > 0 ? (progress.total_bytes - progress.downloaded_bytes) / speed : Number.NaN)} left
          {progress.repo && ` · ${progress.hub}: ${progress.repo}`}
        </p>
      )}
      <ErrorLine error={error ?? progress?.error?.message ?? cancel.error} />
      {!finished && (
        <button class="danger" disabled={cancel.busy} onClick={() => void cancel.run(() => client.cancel(uid))} type="button">
          Cancel launch
        </button>
      )}
      {stage === 'ready' && (
        <p>
          <a class="button" href={`/ui/playground/${encodeURIComponent(uid)}`}>
            Open playground
          </a>{' '}
          <a href="/ui/models">Running models</a>
        </p>
      )}
      {finished && stage !== 'ready' && (
        <button class="secondary" onClick={onDone} type="button">
          Back to the form
        </button>
      )}
    </div>
  )
}
