/**
 * The background builds of engines for the service's machine (`GET /v1/engine-builds`, each status as `servicectl
 * engine` reads it): shown on the launch page while one runs (stage and progress), once one has failed (why, where its
 * whole output is, its last lines) or succeeded (which binaries models launched now load); nothing otherwise, as the
 * CLI. Asked again every few seconds while one runs.
 */
import {useEffect, useState} from 'preact/hooks'

import type {EngineBuildStatus} from '../../../src/protocol/engine-build.js'

import {client} from '../api.js'

const POLL_MS = 2000

const running = (build: EngineBuildStatus) => build.state === 'checking' || build.state === 'building'
const worthShowing = (build: EngineBuildStatus) => build.state === 'building' || build.state === 'failed' || build.state === 'succeeded'

export function EngineBuilds() {
  const [builds, setBuilds] = useState<EngineBuildStatus[]>([])
  useEffect(() => {
    let stopped = false
    let timer: ReturnType<typeof setTimeout> | undefined
    let buildRunning = false
    const poll = async () => {
      // Quiet when refused or unreachable: the page's own calls report that. A build known to run is asked about again.
      const answer = await client.engineBuilds().catch(() => undefined)
      if (stopped) return
      if (answer) {
        setBuilds(answer.data)
        buildRunning = answer.data.some(running)
      }

      if (buildRunning) timer = setTimeout(poll, POLL_MS)
    }

    void poll()
    return () => {
      stopped = true
      clearTimeout(timer)
    }
  }, [])

  const shown = builds.filter(worthShowing)
  if (shown.length === 0) return null
  return (
    <section aria-label="Engine builds" aria-live="polite" class="panel engine-builds">
      {shown.map((build) => (
        <EngineBuild build={build} key={build.engine} />
      ))}
    </section>
  )
}

function EngineBuild({build}: {build: EngineBuildStatus}) {
  const {binaries, engine, error, log_file: logFile, log_tail: tail = [], percent, stage, state} = build
  if (state === 'building')
    return (
      <div data-state={state}>
        <p>
          <strong>{engine}</strong> is being built for this machine in the background: {percent === undefined ? (stage ?? 'starting') : `${percent}% (${stage})`}. Models
          launched before it ends use the current binaries.
        </p>
        <progress aria-label={`Build of ${engine}`} max={100} value={percent} />
      </div>
    )
  if (state === 'succeeded')
    return (
      <p data-state={state}>
        <strong>{engine}</strong> was built for this machine in the background. {binaries}
      </p>
    )
  return (
    <div data-state={state}>
      <p class="error">
        The background build of {engine} failed: {error}
      </p>
      {logFile && (
        <p>
          Its whole output, on the service's machine: <code>{logFile}</code>
        </p>
      )}
      {tail.length > 0 && (
        <details>
          <summary>Last lines of its output</summary>
          <pre class="output">{tail.join('\n')}</pre>
        </details>
      )}
      <p class="muted">
        <code>servicectl engine build {engine}</code> tries again, with its output on the terminal.
      </p>
    </div>
  )
}
