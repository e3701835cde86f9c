/** Pieces every page shares: loading data with its error, an error line, byte and duration formats. */
import type {ComponentChildren} from 'preact'
import {useCallback, useEffect, useRef, useState} from 'preact/hooks'

import {describeError} from './api.js'

export interface LoadOptions {
  /** Load again every so many milliseconds while the page is shown: for pages that watch something change. */
  everyMs?: number
  /** Load again when the browser tab is shown again, since what was loaded may have changed while it was hidden. */
  whenShown?: boolean
}

/** Loads `load()` now, again on `reload()`, and as `options` ask. */
export function useLoad<T>(load: () => Promise<T>, dependencies: unknown[] = [], {everyMs, whenShown = false}: LoadOptions = {}) {
  const [data, setData] = useState<T | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const latest = useRef(load)
  latest.current = load
  const asked = useRef(0)
  const shown = useRef(0)
  const reload = useCallback(async () => {
    // Loads can overlap (a timer, a shown tab, a click): one that answers after a later one is not shown, so an older
    // answer never replaces a newer; every answer newer than what is shown is, so slow answers still arrive.
    const ask = ++asked.current
    const outcome = await latest.current().then(
      (loaded) => ({loaded}),
      (failure: unknown) => ({failure}),
    )
    if (ask < shown.current) return
    shown.current = ask
    if ('failure' in outcome) return setError(describeError(outcome.failure))
    setData(outcome.loaded)
    setError(undefined)
  }, [])
  useEffect(() => {
    void reload()
    const timer = everyMs ? setInterval(() => void reload(), everyMs) : undefined
    const onShown = () => {
      if (document.visibilityState === 'visible') void reload()
    }
    if (whenShown) document.addEventListener('visibilitychange', onShown)
    return () => {
      clearInterval(timer)
      document.removeEventListener('visibilitychange', onShown)
    }
  }, dependencies)
  return {data, error, reload}
}

export function ErrorLine({error}: {error?: string}) {
  if (!error) return null
  return (
    <p class="error" role="alert">
      {error}
    </p>
  )
}

const UNITS = ['B', 'kB', 'MB', 'GB', 'TB']

export function formatBytes(bytes: number): string {
  let value = bytes
  let unit = 0
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000
    unit++
  }

  return `${value < 10 && unit > 0 ? value.toFixed(1) : Math.round(value)} ${UNITS[unit]}`
}

export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return '—'
  if (seconds < 60) return `${Math.ceil(seconds)} s`
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.ceil(seconds % 60)} s`
  return `${Math.floor(seconds / 3600)} h ${Math.ceil((seconds % 3600) / 60)} min`
}

/** Runs an action, keeping its error for the page to show; answers whether it succeeded. */
export function useAction() {
  const [error, setError] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)
  const run = async (action: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true)
    setError(undefined)
    try {
      await action()
      return true
    } catch (failure) {
      setError(describeError(failure))
      return false
    } finally {
      setBusy(false)
    }
  }

  return {busy, error, run, setError}
}

/** A table with column headings, scrolling sideways inside itself on a narrow screen rather than widening the page. */
/**
 * A table that a phone shows as one card a row (style.css): each cell is labelled with its column's heading, which
 * the narrow layout prints before it, so no row needs scrolling sideways to reach its last cells (the actions).
 */
export function Table({children, headings}: {headings: string[]; children: ComponentChildren}) {
  const table = useRef<HTMLTableElement>(null)
  useEffect(() => {
    for (const row of table.current?.tBodies[0]?.rows ?? []) for (const [index, cell] of [...row.cells].entries()) cell.dataset.label = headings[index] ?? ''
  })
  return (
    <div class="table-scroll">
      <table ref={table}>
        <thead>
          <tr>
            {headings.map((title, index) => (
              <th key={index} scope="col">
                {title}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  )
}

/**
 * Tabs as the WAI-ARIA pattern has them: one stop for Tab (the selected tab), arrow keys, Home and End to move
 * between them. `options` are [value, label] pairs.
 */
export function Tabs({label, onChange, options, value}: {label: string; options: Array<[string, string]>; value: string | undefined; onChange: (value: string) => void}) {
  const list = useRef<HTMLDivElement>(null)
  const onKeyDown = (event: KeyboardEvent) => {
    const index = options.findIndex(([option]) => option === value)
    const next = {ArrowLeft: index - 1, ArrowRight: index + 1, End: options.length - 1, Home: 0}[event.key]
    if (next === undefined) return
    event.preventDefault()
    const target = (next + options.length) % options.length
    onChange(options[target][0])
    list.current?.querySelectorAll<HTMLElement>('[role="tab"]')[target]?.focus()
  }

  return (
    <div aria-label={label} class="tabs" onKeyDown={onKeyDown} ref={list} role="tablist">
      {options.map(([option, text]) => (
        <button aria-selected={option === value} key={option} onClick={() => onChange(option)} role="tab" tabIndex={option === value ? 0 : -1} type="button">
          {text}
        </button>
      ))}
    </div>
  )
}
