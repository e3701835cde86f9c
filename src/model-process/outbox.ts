import type {RequestMessage} from './messages.js'

export interface OutboxTimers {
  now(): number
  /** Runs `callback` after the current event-loop turn, or after `delayMs` when given. */
  later(callback: () => void, delayMs?: number): void
}

const realTimers: OutboxTimers = {
  // The timer only sends what is held; it need not keep a process whose work is done alive.
  later: (callback, delayMs) => (delayMs === undefined ? setImmediate(callback) : setTimeout(callback, delayMs).unref()),
  now: () => performance.now(),
}

/** The stream interval's variable: how long, at most, a streaming request's tokens are held; 0 for every decode step. */
export const STREAM_INTERVAL_ENV = 'SERVICE_STREAM_INTERVAL_MS'
const DEFAULT_STREAM_INTERVAL_MS = 16

/** The stream interval `env` sets (SERVICE_STREAM_INTERVAL_MS), 16 ms unless it gives a number ≥ 0; `warn` hears of a bad one. */
export function streamInterval(env: Record<string, string | undefined>, warn: (message: string) => void): number {
  const setting = env[STREAM_INTERVAL_ENV]
  if (setting === undefined || setting === '') return DEFAULT_STREAM_INTERVAL_MS
  const value = Number(setting)
  if (Number.isFinite(value) && value >= 0) return value
  warn(`${STREAM_INTERVAL_ENV}=${setting} is not a number of milliseconds ≥ 0; using ${DEFAULT_STREAM_INTERVAL_MS}.`)
  return DEFAULT_STREAM_INTERVAL_MS
}

/** How many events of a request go out without waiting: its start and its first token (the TTFT). */
const PROMPT_EVENTS = 2

/**
 * All of a model process's request messages go through one outbox and leave as one IPC message per flush, so
 * concurrent streams cost one IPC round per decode step rather than one per token per stream.
 *
 * A request's start, its first token, its end or error leave at once, with whatever is held: the client waits for
 * them, and sending before the engine's next decode is under way leaves the service and the client a core to take
 * them (time to first token on a 2-core machine: 7.6 → 5.4 ms on a 4M model). Other messages leave on the next
 * event-loop turn, after the engine has started its next decode. Once a request streams, its tokens are held while
 * its next token is due within `intervalMs` of the previous flush: each flush wakes the worker, which writes to the
 * client's socket and wakes the client, and on a small machine those wake-ups take the cores from the decode
 * (0.3–0.4 ms each on 2 cores, a tenth of a 4M model's tokens at one flush every 3 ms). A token comes no later
 * than its successor would, so a model slower than the interval sends every token at once. Flushes ride on posts
 * rather than on a timer, whose own wake-up cost as much where a core was free; the timer only sends what is held
 * when no message follows (a stop string being checked). A held event joins the same request's last held one when
 * `join` can make one of the two (text pieces), so the tokens of one interval cost the service and the client one
 * event.
 */
export class Outbox {
  private messages: RequestMessage[] = []
  /** Where each request's last held event sits in `messages`, so a later one can join it. */
  private readonly lastHeld = new Map<number, number>()
  /**
   * Each streaming request's events so far, and when it posted its last one: the gap to its next one is taken to be
   * the same.
   */
  private readonly streams = new Map<number, {events: number; postedAt: number}>()
  private urgent = false
  /** Which scheduled flush is current: a flush made sooner turns the ones scheduled before it stale. */
  private schedule = 0
  private flushScheduled = false
  private timerArmed = false
  private lastFlush = Number.NEGATIVE_INFINITY
  private sending: Promise<void> = Promise.resolve()

  constructor(
    private readonly send: (message: RequestMessage | {type: 'batch'; messages: RequestMessage[]}) => Promise<void>,
    private readonly intervalMs: number,
    private readonly timers: OutboxTimers = realTimers,
    private readonly join: (earlier: unknown, later: unknown) => unknown = () => undefined,
  ) {}

  post(message: RequestMessage): void {
    const now = this.timers.now()
    let gap = 0
    if (message.type === 'event') {
      const stream = this.streams.get(message.id) ?? {events: 0, postedAt: now}
      this.streams.set(message.id, stream)
      stream.events++
      if (stream.events <= PROMPT_EVENTS) {
        this.urgent = true
        this.messages.push(message)
      } else {
        gap = now - stream.postedAt
        if (!this.joined(message)) {
          this.lastHeld.set(message.id, this.messages.length)
          this.messages.push(message)
        }
      }

      stream.postedAt = now
    } else {
      this.lastHeld.delete(message.id)
      this.streams.delete(message.id)
      this.messages.push(message)
      this.urgent = true
    }

    if (this.urgent) {
      void this.flush()
      return
    }

    if (this.flushScheduled) return
    const due = this.lastFlush + this.intervalMs - now
    if (due - gap <= 0) {
      this.flushScheduled = true
      this.timerArmed = false
      const schedule = ++this.schedule
      this.timers.later(() => schedule === this.schedule && void this.flush())
    } else if (!this.timerArmed) {
      this.timerArmed = true
      const schedule = ++this.schedule
      this.timers.later(() => schedule === this.schedule && void this.flush(), due + this.intervalMs)
    }
  }

  /** Folds an event into the same request's last held one, when `join` can express both as one. */
  private joined(message: Extract<RequestMessage, {type: 'event'}>): boolean {
    const at = this.lastHeld.get(message.id)
    if (at === undefined) return false
    const held = this.messages[at] as Extract<RequestMessage, {type: 'event'}>
    const event = this.join(held.event, message.event)
    if (event === undefined) return false
    this.messages[at] = {...held, event}
    return true
  }

  /** Sends whatever is held now; resolves once the channel has taken it. */
  flush(): Promise<void> {
    this.schedule++
    this.flushScheduled = false
    this.timerArmed = false
    if (this.messages.length > 0) {
      const messages = this.messages
      this.messages = []
      this.lastHeld.clear()
      this.urgent = false
      this.lastFlush = this.timers.now()
      this.sending = this.send(messages.length === 1 ? messages[0] : {messages, type: 'batch'})
    }

    return this.sending
  }
}
