import { GatewayError } from '../../errors'
import type { Message, MessageVersion } from '../types'
import type { ChatAction, MessageState } from './ports'
import { summarize, type ReactionSummary } from './reactions'
import { CHAT_EVENTS } from './rooms'

/** A chat message as the Chat REST API (v4) returns it. */
export interface ChatMessage {
  serial: string
  clientId?: string
  text: string
  metadata: Record<string, unknown>
  headers: Record<string, unknown>
  action: ChatAction
  /** Creation time; `version.timestamp` is the time of the latest change. */
  timestamp: number
  version: {
    serial: string
    timestamp: number
    clientId?: string
    description?: string
    metadata?: Record<string, unknown>
  }
  reactions: ReactionSummary
  /** The author's user claim for the room when the message was sent (see auth/user-claims.ts). */
  userClaim?: string
}

export interface SendInput {
  text: string
  metadata: Record<string, unknown>
  headers: Record<string, unknown>
}

export interface EditInput {
  text?: unknown
  metadata?: unknown
  headers?: unknown
  /** The edit's own description and metadata (v4 `description` / `metadata`). */
  description?: unknown
  operationMetadata?: unknown
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array)

const invalid = (why: string) => new GatewayError(40001, `Invalid request body: ${why}`)

export function checkText(text: unknown): string {
  if (typeof text !== 'string' || text.length === 0) throw invalid('text must be a non-empty string')
  return text
}

export function checkMetadata(v: unknown, name = 'metadata'): Record<string, unknown> {
  if (v === undefined || v === null) return {}
  if (!isObject(v)) throw invalid(`${name} must be an object`)
  return v
}

/** Headers are a flat object of strings, numbers, booleans or null (filterable values). */
export function checkHeaders(v: unknown): Record<string, unknown> {
  if (v === undefined || v === null) return {}
  if (!isObject(v)) throw invalid('headers must be an object')
  for (const [k, h] of Object.entries(v)) {
    if (h !== null && !['string', 'number', 'boolean'].includes(typeof h))
      throw invalid(`header "${k}" must be a string, number, boolean or null`)
  }
  return v
}

export function checkDescription(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw invalid('description must be a string')
  return v
}

export function sendInput(body: unknown): SendInput {
  if (!isObject(body)) throw invalid('must be an object with text')
  return { text: checkText(body.text), metadata: checkMetadata(body.metadata), headers: checkHeaders(body.headers) }
}

/** The create event of a message on the room channel (as the hosted service writes it). */
export function createEvent(
  input: SendInput,
  clientId: string | undefined,
  userClaim?: string,
): Omit<Message, 'id' | 'serial' | 'timestamp'> {
  const m: Omit<Message, 'id' | 'serial' | 'timestamp'> = {
    name: CHAT_EVENTS.message,
    action: 0,
    data: JSON.stringify({ text: input.text, metadata: input.metadata }),
    encoding: 'json',
    extras: userClaim === undefined ? { headers: input.headers } : { headers: input.headers, userClaim },
  }
  if (clientId !== undefined) m.clientId = clientId
  return m
}

/** The message as created, from its create event; undefined for any other event. */
export function fromCreateEvent(m: Message): ChatMessage | undefined {
  return (m.action ?? 0) === 0 ? fromVersion(m) : undefined
}

const ACTIONS: Record<number, ChatAction> = { 0: 'message.create', 1: 'message.update', 2: 'message.delete' }

/**
 * A chat message in one of its versions: its create event, or the message as an update or delete
 * left it (a version of the mutable-messages path, whose `version` names the change, see
 * channels/versions.ts `fold`); undefined for any other event.
 */
export function fromVersion(m: Message): ChatMessage | undefined {
  const action = ACTIONS[m.action ?? 0]
  if (m.name !== CHAT_EVENTS.message || m.kind !== undefined || !action || typeof m.data !== 'string') return undefined
  let data: unknown
  try {
    data = JSON.parse(m.data)
  } catch {
    return undefined
  }
  if (!isObject(data) || typeof data.text !== 'string') return undefined
  const headers = isObject(m.extras) && isObject(m.extras.headers) ? m.extras.headers : {}
  const out: ChatMessage = {
    serial: m.serial,
    text: data.text,
    metadata: isObject(data.metadata) ? data.metadata : {},
    headers,
    action,
    timestamp: m.timestamp,
    version: m.version ? versionView(m.version) : { serial: m.serial, timestamp: m.timestamp },
    reactions: summarize([]),
  }
  if (m.clientId !== undefined) out.clientId = m.clientId
  if (isObject(m.extras) && typeof m.extras.userClaim === 'string') out.userClaim = m.extras.userClaim
  return out
}

/** The message with its reactions (the state the chat store holds of it) applied. */
export function withState(m: ChatMessage, state: MessageState | undefined): ChatMessage {
  return state ? { ...m, reactions: summarize(state.reactions) } : m
}

function versionView(v: MessageVersion): ChatMessage['version'] {
  const out: ChatMessage['version'] = { serial: v.serial, timestamp: v.timestamp }
  if (v.clientId !== undefined) out.clientId = v.clientId
  if (v.description !== undefined) out.description = v.description
  if (v.metadata !== undefined) out.metadata = v.metadata
  return out
}
