import { GatewayError } from '../../errors'
import { actionNumber } from './protocol'

/**
 * The rules of a fault session, in the grammar of the hosted service's test proxy (uts-proxy,
 * docs/API.md): a rule has a `match` (when it fires), an `action` (what happens), `times` (it is
 * removed after firing that many times; 0 or absent: never) and a `comment` (its label in the
 * event log). Rules are tried in order and the first that matches wins; `count` on a match makes
 * it fire only on the Nth time its condition held.
 */
export const MATCH_TYPES = [
  'ws_connect',
  'ws_frame_to_server',
  'ws_frame_to_client',
  'http_request',
  'delay_after_ws_connect',
] as const
export type MatchType = (typeof MATCH_TYPES)[number]

const FRAME_ACTIONS = [
  'passthrough',
  'suppress',
  'delay',
  'inject_to_client',
  'inject_to_client_and_close',
  'replace',
  'suppress_onwards',
  'disconnect',
  'close',
]

/** What each kind of match can do (anything else is refused when the rule is added). */
const ACTIONS_OF: Record<MatchType, readonly string[]> = {
  ws_connect: ['passthrough', 'refuse_connection', 'accept_and_close'],
  ws_frame_to_server: FRAME_ACTIONS,
  ws_frame_to_client: FRAME_ACTIONS,
  delay_after_ws_connect: [
    'passthrough',
    'disconnect',
    'close',
    'inject_to_client',
    'inject_to_client_and_close',
    'suppress_onwards',
  ],
  http_request: ['passthrough', 'http_respond', 'http_delay', 'http_drop', 'http_replace_response'],
}

/** The imperative actions of `POST /sessions/{id}/actions`. */
export const IMPERATIVE_ACTIONS = ['disconnect', 'close', 'inject_to_client', 'inject_to_client_and_close'] as const

/** Longest delay a rule may ask for (ms): 10 minutes. */
export const MAX_DELAY_MS = 600_000
/** Longest rule comment (characters). */
const MAX_COMMENT = 256

export interface Match {
  type: MatchType
  count?: number
  /** The protocol action number (`action` given by name or number). */
  action?: number
  channel?: string
  method?: string
  pathContains?: string
  queryContains?: Record<string, string>
  delayMs?: number
}

export interface RuleAction {
  type: string
  closeCode?: number
  delayMs?: number
  message?: Record<string, unknown>
  status?: number
  body?: unknown
  headers?: Record<string, string>
}

export interface Rule {
  match: Match
  action: RuleAction
  /** Firings left before the rule is removed; 0: unlimited. */
  times: number
  comment?: string
  /** How many times the match's condition held (for `count`). */
  matchCount: number
}

/** What happened, as rules match it. */
export interface MatchEvent {
  type: MatchType
  action?: number
  channel?: string
  method?: string
  path?: string
  query?: Record<string, string>
}

const bad = (message: string) => new GatewayError(40003, message)

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v)

function int(v: unknown, what: string, min: number, max: number): number | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    throw bad(`${what} must be an integer in [${min}, ${max}]`)
  return v
}

function string(v: unknown, what: string): string | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw bad(`${what} must be a string`)
  return v
}

function stringMap(v: unknown, what: string): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined
  if (!isObject(v) || Object.values(v).some((x) => typeof x !== 'string'))
    throw bad(`${what} must be an object of strings`)
  return v as Record<string, string>
}

function parseMatch(v: unknown, at: string): Match {
  if (!isObject(v)) throw bad(`${at}.match must be an object`)
  const type = v.type
  if (!MATCH_TYPES.includes(type as MatchType))
    throw bad(`${at}.match.type must be one of ${MATCH_TYPES.join(', ')} (got ${JSON.stringify(type)})`)
  const m: Match = { type: type as MatchType }
  const count = int(v.count, `${at}.match.count`, 0, Number.MAX_SAFE_INTEGER)
  if (count) m.count = count
  if (v.action !== undefined && v.action !== null && v.action !== '') {
    const n = actionNumber(v.action)
    if (n === undefined) throw bad(`${at}.match.action: no protocol action ${JSON.stringify(v.action)}`)
    m.action = n
  }
  const channel = string(v.channel, `${at}.match.channel`)
  if (channel) m.channel = channel
  const method = string(v.method, `${at}.match.method`)
  if (method) m.method = method.toUpperCase()
  const path = string(v.pathContains, `${at}.match.pathContains`)
  if (path) m.pathContains = path
  const query = stringMap(v.queryContains, `${at}.match.queryContains`)
  if (query && Object.keys(query).length) m.queryContains = query
  const delay = int(v.delayMs, `${at}.match.delayMs`, 0, MAX_DELAY_MS)
  if (delay !== undefined) m.delayMs = delay
  return m
}

/** An action's fields (its type already checked against what the match allows). */
export function parseAction(v: Record<string, unknown>, at: string): RuleAction {
  const a: RuleAction = { type: v.type as string }
  const closeCode = int(v.closeCode, `${at}.closeCode`, 0, 4999)
  if (closeCode) {
    if (closeCode < 1000 || closeCode === 1005 || closeCode === 1006 || closeCode === 1015)
      throw bad(`${at}.closeCode ${closeCode} cannot be sent in a close frame`)
    a.closeCode = closeCode
  }
  const delay = int(v.delayMs, `${at}.delayMs`, 0, MAX_DELAY_MS)
  if (delay !== undefined) a.delayMs = delay
  if (v.message !== undefined && v.message !== null) {
    if (!isObject(v.message)) throw bad(`${at}.message must be a protocol message (an object)`)
    a.message = v.message
  }
  if ((a.type.startsWith('inject_to_client') || a.type === 'replace') && !a.message)
    throw bad(`${at}: ${a.type} needs a message`)
  const status = int(v.status, `${at}.status`, 0, 599)
  if (status) {
    if (status < 200) throw bad(`${at}.status must be in [200, 599]`)
    a.status = status
  }
  if (v.body !== undefined) a.body = v.body
  const headers = stringMap(v.headers, `${at}.headers`)
  if (headers) {
    try {
      new Headers(headers)
    } catch {
      throw bad(`${at}.headers: not valid HTTP header names and values`)
    }
    a.headers = headers
  }
  return a
}

function parseRule(v: unknown, at: string): Rule {
  if (!isObject(v)) throw bad(`${at} must be an object with match and action`)
  const match = parseMatch(v.match, at)
  if (!isObject(v.action) || typeof v.action.type !== 'string') throw bad(`${at}.action must be an object with a type`)
  if (!ACTIONS_OF[match.type].includes(v.action.type))
    throw bad(
      `${at}.action.type ${JSON.stringify(v.action.type)} does not apply to ${match.type} (one of ${ACTIONS_OF[match.type].join(', ')})`,
    )
  const action = parseAction(v.action, `${at}.action`)
  const times = int(v.times, `${at}.times`, 0, Number.MAX_SAFE_INTEGER) ?? 0
  const comment = string(v.comment, `${at}.comment`)
  if (comment !== undefined && comment.length > MAX_COMMENT)
    throw bad(`${at}.comment must be at most ${MAX_COMMENT} characters`)
  return { match, action, times, comment: comment || undefined, matchCount: 0 }
}

/** The rules of a request body's `rules` (absent: none); 40003 naming the first problem. */
export function parseRules(v: unknown): Rule[] {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v)) throw bad('rules must be an array')
  return v.map((r, i) => parseRule(r, `rules[${i}]`))
}

/** Whether the rule's condition holds for the event (its `count` aside). */
export function matches(rule: Rule, e: MatchEvent): boolean {
  const m = rule.match
  if (m.type !== e.type) return false
  if (m.action !== undefined && e.action !== m.action) return false
  if (m.channel !== undefined && e.channel !== m.channel) return false
  if (m.method !== undefined && e.method?.toUpperCase() !== m.method) return false
  if (m.pathContains !== undefined && !e.path?.includes(m.pathContains)) return false
  if (m.queryContains)
    for (const k in m.queryContains) {
      const actual = e.query?.[k]
      if (actual === undefined) return false
      if (m.queryContains[k] !== '*' && m.queryContains[k] !== actual) return false
    }
  return true
}
