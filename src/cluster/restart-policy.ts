/**
 * When a crashed model is relaunched: after a delay that doubles with each attempt in a row (1 s, 2 s, 4 s …,
 * capped), and not at all once the attempts in a row reach the limit. A model that stayed up long enough after its
 * last relaunch starts counting again, so one crash a day never exhausts the limit.
 */
export interface RestartPolicy {
  /** Relaunches in a row before the model stays failed; 0 turns self-healing off (SERVICE_RESTART_ATTEMPTS). */
  attempts: number
  /** The first delay; each further attempt in a row waits twice as long (SERVICE_RESTART_DELAY, seconds). */
  baseDelayMs: number
  maxDelayMs: number
  /** A model up this long since its last relaunch counts its next crash as the first in a row. */
  stableMs: number
  /** How long a request to a model being relaunched waits for it before a 503 (SERVICE_RESTART_WAIT, seconds). */
  waitMs: number
}

export const RESTART_ATTEMPTS_ENV = 'SERVICE_RESTART_ATTEMPTS'
export const RESTART_WAIT_ENV = 'SERVICE_RESTART_WAIT'
export const RESTART_DELAY_ENV = 'SERVICE_RESTART_DELAY'

export const DEFAULT_RESTART_POLICY: RestartPolicy = {attempts: 5, baseDelayMs: 1000, maxDelayMs: 30_000, stableMs: 60_000, waitMs: 30_000}

/** The policy the environment asks for; a value that is not a number keeps the default. */
export function restartPolicyFrom(env: Record<string, string | undefined>): RestartPolicy {
  const attempts = Number.parseInt(env[RESTART_ATTEMPTS_ENV] ?? '', 10)
  const seconds = (name: string) => {
    const value = Number.parseFloat(env[name] ?? '')
    return Number.isFinite(value) && value >= 0 ? value * 1000 : undefined
  }

  const baseDelayMs = seconds(RESTART_DELAY_ENV)
  const waitMs = seconds(RESTART_WAIT_ENV)
  return {
    ...DEFAULT_RESTART_POLICY,
    ...(Number.isInteger(attempts) && attempts >= 0 ? {attempts} : {}),
    ...(baseDelayMs === undefined ? {} : {baseDelayMs, maxDelayMs: Math.max(DEFAULT_RESTART_POLICY.maxDelayMs, baseDelayMs)}),
    ...(waitMs === undefined ? {} : {waitMs}),
  }
}

/** A model's relaunches so far: how many in a row, and when the last one became ready (ms since the epoch). */
export interface RestartHistory {
  inARow: number
  lastReadyAt?: number
  /** Whether a request to it failed, and whether one was answered in full, since it last became ready. */
  requestFailed?: boolean
  answered?: boolean
}

export type RestartDecision = {attempt: number; delayMs: number} | {giveUp: string}

/** What to do about a crash at `now`: relaunch (which attempt in a row, after how long), or give up and why. */
export function planRestart(policy: RestartPolicy, history: RestartHistory, now: number): RestartDecision {
  if (policy.attempts === 0) return {giveUp: `self-healing is off (${RESTART_ATTEMPTS_ENV}=0)`}
  // A model that failed its requests and answered none since it became ready is broken however long it was up.
  const failsEveryRequest = history.requestFailed === true && history.answered !== true
  const stable = history.lastReadyAt !== undefined && now - history.lastReadyAt >= policy.stableMs && !failsEveryRequest
  const attempt = stable ? 1 : history.inARow + 1
  if (attempt > policy.attempts) return {giveUp: `it crashed ${policy.attempts + 1} times in a row and was relaunched ${policy.attempts} times`}
  return {attempt, delayMs: Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1))}
}
