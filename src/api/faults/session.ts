import type { Server } from 'bun'
import { GatewayError } from '../../errors'
import type { SocketData } from '../realtime/socket'
import { EventLog } from './event-log'
import { matches, type MatchEvent, type Rule } from './rules'

/** A WebSocket of a session's port, as the session sees it (fault-socket.ts). */
export interface SessionSocket {
  /** Its number among the session's WebSocket connections (1-based). */
  readonly number: number
  /** Ended by the proxy or closed: nothing passes any more. */
  readonly ended: boolean
  later(ms: number, fn: () => void): void
  trigger(rule: Rule, label: string): void
}

/** The bounds of a fault session (settings FAULTS_MAX_*). */
export interface SessionLimits {
  maxRules: number
  maxLogEvents: number
  maxLogBytes: number
}

/**
 * A fault session: its rules, its event log, the WebSockets of its port and its idle timer. It
 * lives until deleted, or until `timeoutMs` pass with no rules added, no action and no new
 * connection or request on its port (reading it or its log does not count).
 */
export class Session<S extends SessionSocket = SessionSocket> {
  readonly log: EventLog
  rules: Rule[]
  /** WebSockets of the port still open, oldest first. */
  readonly sockets: S[] = []
  wsConnects = 0
  server?: Server<SocketData>
  closed = false
  private idleTimer?: ReturnType<typeof setTimeout>
  /** Requests held by `http_delay`, let go (dropped) when the session ends. */
  readonly held = new Set<() => void>()

  constructor(
    readonly id: string,
    readonly target: unknown,
    rules: Rule[],
    readonly timeoutMs: number,
    private readonly limits: SessionLimits,
    private readonly expire: (s: Session<S>) => void,
  ) {
    this.checkRuleCount(rules.length)
    this.rules = rules
    this.log = new EventLog(limits.maxLogEvents, limits.maxLogBytes)
    this.touch()
  }

  get port(): number {
    return this.server?.port ?? 0
  }

  /** Something happened on the session: its idle timer starts again. */
  touch(): void {
    if (this.closed) return
    clearTimeout(this.idleTimer)
    this.idleTimer = setTimeout(() => this.expire(this), this.timeoutMs)
  }

  private checkRuleCount(n: number): void {
    if (n > this.limits.maxRules)
      throw new GatewayError(40003, `A session holds at most ${this.limits.maxRules} rules (FAULTS_MAX_RULES)`)
  }

  addRules(rules: Rule[], prepend: boolean): void {
    this.checkRuleCount(this.rules.length + rules.length)
    this.rules = prepend ? [...rules, ...this.rules] : [...this.rules, ...rules]
  }

  /** The first rule that matches (counting, for `count`, every rule whose condition held on the way). */
  findRule(e: MatchEvent): { rule: Rule; label: string } | undefined {
    for (let i = 0; i < this.rules.length; i++) {
      const rule = this.rules[i]!
      if (!matches(rule, e)) continue
      rule.matchCount++
      if (rule.match.count && rule.matchCount !== rule.match.count) continue
      return { rule, label: labelOf(rule, i) }
    }
    return undefined
  }

  /** A rule fired: removed once it has fired `times` times. */
  fire(rule: Rule): void {
    if (rule.times <= 0) return
    if (--rule.times === 0) this.rules = this.rules.filter((r) => r !== rule)
  }

  /** A new socket's temporal triggers (`delay_after_ws_connect`, `count`: only on the Nth socket). */
  scheduleTemporal(socket: S): void {
    this.rules.forEach((rule, i) => {
      if (rule.match.type !== 'delay_after_ws_connect') return
      if (rule.match.count && rule.match.count !== socket.number) return
      const label = labelOf(rule, i)
      socket.later(rule.match.delayMs ?? 0, () => {
        // a rule used up (or removed) meanwhile no longer fires
        if (!this.rules.includes(rule)) return
        socket.trigger(rule, label)
        this.fire(rule)
      })
    })
  }

  socketOpened(socket: S): void {
    this.sockets.push(socket)
  }

  socketGone(socket: S): void {
    const i = this.sockets.indexOf(socket)
    if (i >= 0) this.sockets.splice(i, 1)
  }

  /** The newest WebSocket still open (the one imperative actions act on). */
  activeSocket(): S | undefined {
    for (let i = this.sockets.length - 1; i >= 0; i--) if (!this.sockets[i]!.ended) return this.sockets[i]
    return undefined
  }

  /** Ends the session: its port closed with every connection on it, held requests dropped. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearTimeout(this.idleTimer)
    for (const drop of this.held) drop()
    this.held.clear()
    await this.server?.stop(true)
  }
}

/** A rule's label in the log: its comment, or `rule-<index>`. */
const labelOf = (rule: Rule, index: number) => rule.comment ?? `rule-${index}`
