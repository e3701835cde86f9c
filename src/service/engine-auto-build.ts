/**
 * The decisions of the background build (engine-auto-builder.ts runs them): whether the person allowed it, whether
 * this machine can build, what the engine's probe answered, and how far the build's output says it has come. Pure
 * functions, so each rule is tested without starting a build.
 */
import {stripVTControlCharacters} from 'node:util'

import type {EngineBuildPlan} from '../kernel/engine-build-plan.js'
import type {EngineBuildStatus} from '../protocol/engine-build.js'

import {missingRequirementsError} from '../kernel/engine-build-plan.js'

/** `true`: every engine that offers a background build; `false`: none; a list: only the engines it names (lower case). */
export type AutoBuildSetting = boolean | string[]

const OFF = ['0', 'false', 'no', 'off', 'none']
const ON = ['1', 'true', 'yes', 'on', 'all']

/** SERVICE_AUTO_BUILD's value: on (unset, 1, true), off (0, false, no), or a comma-separated list of engines. */
export function parseAutoBuildSetting(value: string | undefined): AutoBuildSetting {
  const text = (value ?? '').trim().toLowerCase()
  if (text === '' || ON.includes(text)) return true
  if (OFF.includes(text)) return false
  return text.split(',').map((name) => name.trim()).filter(Boolean)
}

/**
 * `--auto-build` or `--no-auto-build` when given, else SERVICE_AUTO_BUILD; unset, it is off where `CI` is set, so a
 * pipeline that starts the service for its tests never spends its minutes compiling an engine it asked nothing of.
 */
export function autoBuildSetting(flag: boolean | undefined, env: NodeJS.ProcessEnv = process.env): AutoBuildSetting {
  const ci = (env.CI ?? '').trim().toLowerCase()
  if (flag === undefined && env.SERVICE_AUTO_BUILD === undefined && ci !== '' && !OFF.includes(ci)) return false
  return flag ?? parseAutoBuildSetting(env.SERVICE_AUTO_BUILD)
}

export const autoBuildAllowed = (setting: AutoBuildSetting, engine: string): boolean =>
  typeof setting === 'boolean' ? setting : setting.includes(engine.toLowerCase())

/**
 * What the service does first with an engine that offers a background build: report it off or unavailable (a
 * final status), or go on to ask the engine's probe (`probe`).
 */
export function firstDecision(plan: EngineBuildPlan, setting: AutoBuildSetting): EngineBuildStatus | 'probe' {
  const {engine} = plan
  if (!autoBuildAllowed(setting, engine))
    return {engine, reason: `the background build is turned off (SERVICE_AUTO_BUILD, --no-auto-build, or CI set); \`servicectl engine build ${engine}\` builds by hand.`, state: 'off'}
  const missing = missingRequirementsError(plan)
  if (missing) return {engine, reason: missing.message, state: 'unavailable'}
  return 'probe'
}

export interface ProbeVerdict {
  wanted: boolean
  reason: string
}

/** The probe's last line of output, `{"wanted": boolean, "reason": "…"}`; anything else is an Error saying what came. */
export function parseProbeOutput(stdout: string): ProbeVerdict {
  const last = stdout.trim().split('\n').at(-1) ?? ''
  let parsed: unknown
  try {
    parsed = JSON.parse(last)
  } catch {
    throw new Error(`the engine's probe printed ${JSON.stringify(last.slice(0, 200))}, not a JSON line`)
  }

  const {reason, wanted} = (parsed ?? {}) as Partial<ProbeVerdict>
  if (typeof wanted !== 'boolean' || typeof reason !== 'string') throw new Error(`the engine's probe printed ${last.slice(0, 200)}, without "wanted" (boolean) and "reason" (string)`)
  return {reason, wanted}
}

export interface BuildProgress {
  stage: 'preparing' | 'compiling'
  /** The build tool's own percent, once it has printed one. */
  percent?: number
  lines: number
  /** The last TAIL_LINES lines, for the status and the message of a failed build. */
  tail: string[]
}

export const TAIL_LINES = 20

export const startProgress = (): BuildProgress => ({lines: 0, stage: 'preparing', tail: []})

/** cmake's makefiles print `[ 42%] Building CXX object …`; ninja prints `[12/80] …`. */
const CMAKE_PERCENT = /^\[\s*(\d{1,3})%\]/
const NINJA_STEPS = /^\[(\d+)\/(\d+)\]/

/** The progress after one more line of the build's output (colours and spinner codes removed; blank lines skipped). */
export function followBuildOutput(progress: BuildProgress, rawLine: string): BuildProgress {
  const line = stripVTControlCharacters(rawLine).trim()
  if (!line) return progress
  const tail = [...progress.tail, line].slice(-TAIL_LINES)
  const next: BuildProgress = {...progress, lines: progress.lines + 1, tail}
  const cmake = CMAKE_PERCENT.exec(line)
  const ninja = NINJA_STEPS.exec(line)
  const percent = cmake ? Number(cmake[1]) : ninja && Number(ninja[2]) > 0 ? Math.floor((100 * Number(ninja[1])) / Number(ninja[2])) : undefined
  if (percent !== undefined && percent <= 100) {
    next.stage = 'compiling'
    next.percent = percent
  }

  return next
}

/** Whether a progress step is worth a log line: each tenth of the way, and the start of compiling. */
export function progressWorthLogging(before: BuildProgress, after: BuildProgress): boolean {
  if (before.stage !== after.stage) return true
  if (after.percent === undefined) return false
  return Math.floor((before.percent ?? 0) / 10) !== Math.floor(after.percent / 10)
}

/** `9m 52s`, `41s`. */
export function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000)
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m ${seconds % 60}s`
}
