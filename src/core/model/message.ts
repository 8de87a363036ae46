import { GatewayError } from '../../errors'
import { utf8Length } from '../../lib/encoding'
import type { Principal } from '../auth/principal'
import { effectiveClientId } from '../auth/principal'
import type { MessageDraft } from '../types'

/**
 * Longest client-supplied message id and encoding (characters). The hosted service does not count
 * either in a message's size, yet both are stored with the message, and every id is kept for the
 * idempotency window: bounded here, the window is bounded in bytes and not only in count.
 */
export const MAX_MESSAGE_ID_LENGTH = 256
export const MAX_ENCODING_LENGTH = 256

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array)

/**
 * Turns one wire message (decoded JSON, msgpack or form) into a draft: data is kept as sent when
 * it is a string or bytes; an object or array is stored as JSON text with `json` appended to its
 * encoding, as the hosted service does. The clientId is checked against the credentials.
 */
export function draftFromWire(input: unknown, p: Principal): MessageDraft {
  if (!isObject(input)) throw new GatewayError(40001, 'Invalid message: each message must be an object')
  const m: MessageDraft = { id: '' }
  const { name, data, encoding, clientId, id, extras } = input
  if (name !== undefined && name !== null) {
    if (typeof name !== 'string') throw new GatewayError(40001, 'Invalid message: name must be a string')
    m.name = name
  }
  if (encoding !== undefined && encoding !== null) {
    if (typeof encoding !== 'string') throw new GatewayError(40013, 'Invalid message: encoding must be a string')
    if (encoding.length > MAX_ENCODING_LENGTH)
      throw new GatewayError(40013, `Invalid message: encoding longer than ${MAX_ENCODING_LENGTH} characters`)
    if (encoding) m.encoding = encoding
  }
  if (data !== undefined && data !== null) {
    if (typeof data === 'string' || data instanceof Uint8Array) m.data = data
    else if (typeof data === 'object') {
      m.data = JSON.stringify(data)
      m.encoding = m.encoding ? `${m.encoding}/json` : 'json'
    } else throw new GatewayError(40013, 'Invalid message data: must be a string, binary, object or array')
  }
  if (id !== undefined && id !== null) {
    if (typeof id !== 'string' || !id)
      throw new GatewayError(40031, 'Invalid publish request (invalid client-specified id)')
    if (id.length > MAX_MESSAGE_ID_LENGTH)
      throw new GatewayError(
        40031,
        `Invalid publish request (invalid client-specified id): longer than ${MAX_MESSAGE_ID_LENGTH} characters`,
      )
    m.id = id
  }
  if (extras !== undefined && extras !== null) {
    if (!isObject(extras)) throw new GatewayError(40001, 'Invalid message: extras must be an object')
    m.extras = extras
  }
  if (clientId !== undefined && clientId !== null && typeof clientId !== 'string')
    throw new GatewayError(40012, 'Invalid message: clientId must be a string')
  if (clientId === '' || clientId === '*') throw new GatewayError(40012, `Invalid clientId "${clientId}"`)
  const cid = effectiveClientId(p, clientId as string | undefined)
  if (cid === null)
    throw new GatewayError(
      40012,
      `Message clientId "${String(clientId)}" does not match the clientId of the credentials`,
    )
  if (cid !== undefined) m.clientId = cid
  return m
}

/** Message size as the hosted service counts it: name + clientId + extras JSON + data bytes. */
export function messageSize(m: MessageDraft): number {
  let n = 0
  if (m.name) n += utf8Length(m.name)
  if (m.clientId) n += utf8Length(m.clientId)
  if (m.extras) n += utf8Length(JSON.stringify(m.extras))
  if (typeof m.data === 'string') n += utf8Length(m.data)
  else if (m.data) n += m.data.byteLength
  return n
}

/**
 * Client-supplied ids: either no message has one, or all do and they share one base
 * (`base:0`, `base:1`, ...) when there are several; anything else is 40031.
 */
export function checkClientIds(drafts: MessageDraft[]): boolean {
  let withId = 0
  for (const d of drafts) if (d.id) withId++
  if (withId === 0) return false
  if (withId !== drafts.length)
    throw new GatewayError(
      40031,
      'Invalid publish request (invalid client-specified id): either all messages or none must have an id',
    )
  if (drafts.length > 1) {
    const base = drafts[0]!.id.slice(0, drafts[0]!.id.lastIndexOf(':'))
    drafts.forEach((d, i) => {
      if (d.id !== `${base}:${i}` || !base)
        throw new GatewayError(
          40031,
          'Invalid publish request (invalid client-specified id): ids of a multi-message publish must be <base>:<index>',
        )
    })
  }
  return true
}
