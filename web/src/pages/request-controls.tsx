/**
 * What the playgrounds' requests share: an action that Stop, or leaving the page, aborts, and its submit and Stop
 * buttons. Kept out of ui.tsx, which the first page loads, since only the playgrounds use them.
 */
import {useEffect, useRef} from 'preact/hooks'

import {isAbort} from '../api.js'
import {useAction} from '../ui.js'

/**
 * useAction for a request that Stop, or leaving the page, aborts: the request's signal closes the connection, and the
 * service, seeing the client go, stops the model's work. An abort is not an error to show.
 */
export function useCancellableAction() {
  const action = useAction()
  const controller = useRef<AbortController | undefined>(undefined)
  useEffect(() => () => controller.current?.abort(), [])
  const run = (work: (signal: AbortSignal) => Promise<unknown>) => {
    const abort = new AbortController()
    controller.current = abort
    return action.run(async () => {
      try {
        await work(abort.signal)
      } catch (failure) {
        if (!isAbort(failure)) throw failure
      } finally {
        if (controller.current === abort) controller.current = undefined
      }
    })
  }

  return {...action, run, stop: () => controller.current?.abort()}
}

/** A form's submit button and, while its request runs, Stop beside it, which aborts the request. */
export function SubmitOrStop({action, disabled = false, label}: {label: string; action: {busy: boolean; stop: () => void}; disabled?: boolean}) {
  return (
    <div class="composer">
      <button disabled={action.busy || disabled} type="submit">
        {label}
      </button>
      {action.busy && (
        <button class="danger" onClick={action.stop} type="button">
          Stop
        </button>
      )}
    </div>
  )
}
