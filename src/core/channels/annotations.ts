import { GatewayError } from '../../errors'
import { toBase64 } from '../../lib/encoding'
import type { Principal } from '../auth/principal'
import { draftFromWire, isObject, messageSize } from '../model/message'
import type { Annotation, AnnotationStateOp, AnnotationSummary } from './ports'

/**
 * Annotations of messages (the hosted service's `message annotations`), as pure functions: a wire
 * annotation checked into a record, the change of a message's summary state it makes, and the
 * summary of a state. The state is a flat map of fields (one per contribution), so a change is
 * one field operation that a store applies atomically, and every node computes the same summary
 * from the same state:
 *
 * - `total.v1`: `t|type` -> count (a delete takes one off);
 * - `flag.v1`: `f|type|client` per identified client;
 * - `distinct.v1`: `d|type|name|client` per name and identified client;
 * - `unique.v1`: `u|type|client` -> name (one name per client: a new one moves it);
 * - `multiple.v1`: `m|type|name|client` -> the client's summed count (`client` empty: the
 *   unidentified ones); a delete removes the client's whole contribution to the name.
 *
 * A type is an opaque string to clients (`namespace:summarization.version` by convention). One
 * whose summarization the service does not know (`com.ably.reactions`, `comments:thread.v2`) is
 * taken as the hosted service takes it: delivered to annotation subscribers and listed with its
 * message, with no part in the summary.
 */

export const ANNOTATION_CREATE = 0
export const ANNOTATION_DELETE = 1

/** The summarisation methods the hosted service has; a type is `namespace:<method>.v1`. */
export type Summarization = 'total' | 'flag' | 'distinct' | 'unique' | 'multiple'
const METHODS = new Set<Summarization>(['total', 'flag', 'distinct', 'unique', 'multiple'])
const NEEDS_CLIENT = new Set<Summarization>(['flag', 'distinct', 'unique'])
const NEEDS_NAME = new Set<Summarization>(['distinct', 'multiple'])

export const MAX_ANNOTATION_TYPE = 255
export const MAX_ANNOTATION_NAME = 255
export const MAX_ANNOTATION_COUNT = 1_000_000
/** A message serial is far shorter; a longer one names no message (and would make long store keys). */
export const MAX_MESSAGE_SERIAL = 128
/** Summary fields a message holds at most (contributions); a new one past it is refused. */
export const MAX_ANNOTATION_FIELDS = 1000
/** Annotations of a message kept for listing (the newest). */
export const MAX_ANNOTATION_LOG = 5000
const SEP = '\u0000'

const invalid = (why: string) => new GatewayError(40003, `Invalid annotation: ${why}`)

/**
 * The summarisation method of a type (`reaction:distinct.v1` -> distinct: what follows its last
 * `:`); undefined for a type of no known summarisation, which is not summarised.
 */
export function summarizationOf(type: string): Summarization | undefined {
  const m = /:([a-z]+)\.v1$/.exec(type)
  const method = m?.[1] as Summarization | undefined
  return method && METHODS.has(method) ? method : undefined
}

/**
 * A wire annotation (REST body item or realtime ANNOTATION entry) as a record without its
 * serial and timestamp (the channel gives them): action, type, name and count checked for its
 * summarisation, data and extras as messages have them, clientId from the credentials.
 */
export function annotationFromWire(
  input: unknown,
  p: Principal,
  messageSerial: string | undefined,
  maxSize: number,
): Omit<Annotation, 'serial' | 'timestamp'> {
  if (!isObject(input)) throw new GatewayError(40001, 'Invalid annotation: must be an object')
  const { action, type, name, count, messageSerial: own } = input
  const serial = messageSerial ?? own
  if (typeof serial !== 'string' || !serial) throw invalid('messageSerial (the annotated message) is required')
  if (serial.length > MAX_MESSAGE_SERIAL) throw invalid(`messageSerial longer than ${MAX_MESSAGE_SERIAL} characters`)
  if (messageSerial !== undefined && own !== undefined && own !== null && own !== messageSerial)
    throw invalid('messageSerial differs from the message of the request')
  const act =
    action === undefined || action === null || action === 0 || action === 'annotation.create'
      ? ANNOTATION_CREATE
      : action === 1 || action === 'annotation.delete'
        ? ANNOTATION_DELETE
        : undefined
  if (act === undefined) throw invalid('action must be annotation.create (0) or annotation.delete (1)')
  if (typeof type !== 'string' || !type || type.length > MAX_ANNOTATION_TYPE)
    throw invalid(`type must be a string of 1 to ${MAX_ANNOTATION_TYPE} characters`)
  const method = summarizationOf(type)
  const draft = draftFromWire({ ...input, name: undefined }, p)
  const a: Omit<Annotation, 'serial' | 'timestamp'> = { id: draft.id, action: act, type, messageSerial: serial }
  if (name !== undefined && name !== null) {
    if (typeof name !== 'string' || !name || name.length > MAX_ANNOTATION_NAME)
      throw invalid(`name must be a string of 1 to ${MAX_ANNOTATION_NAME} characters`)
    a.name = name
  } else if (method && (NEEDS_NAME.has(method) || (method === 'unique' && act === ANNOTATION_CREATE)))
    throw invalid(`name is required for ${method}.v1`)
  if (count !== undefined && count !== null) {
    if (method && method !== 'multiple') throw invalid('count is only allowed for multiple.v1')
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > MAX_ANNOTATION_COUNT)
      throw invalid(`count must be an integer from 1 to ${MAX_ANNOTATION_COUNT}`)
    a.count = count
  }
  if (draft.clientId !== undefined) a.clientId = draft.clientId
  if (method && NEEDS_CLIENT.has(method) && a.clientId === undefined)
    throw new GatewayError(40012, `Annotations of type ${method}.v1 need an identified client`)
  if (draft.data !== undefined) {
    a.data = draft.data instanceof Uint8Array ? toBase64(draft.data) : draft.data
    const enc =
      draft.data instanceof Uint8Array ? (draft.encoding ? `${draft.encoding}/base64` : 'base64') : draft.encoding
    if (enc) a.encoding = enc
  }
  if (draft.extras !== undefined) a.extras = draft.extras
  const size = messageSize({ id: '', name: a.name, data: a.data, clientId: a.clientId, extras: a.extras })
  if (size > maxSize)
    throw new GatewayError(40009, `Maximum message length exceeded (size was ${size} bytes, limit is ${maxSize} bytes)`)
  return a
}

/** The change an annotation makes to its message's summary state; none for a type not summarised. */
export function stateOp(
  a: Pick<Annotation, 'action' | 'type' | 'name' | 'count' | 'clientId'>,
): AnnotationStateOp | undefined {
  const method = summarizationOf(a.type)
  const create = a.action === ANNOTATION_CREATE
  const client = a.clientId ?? ''
  const name = a.name ?? ''
  switch (method) {
    case 'total':
      return { field: ['t', a.type].join(SEP), op: 'incr', by: create ? 1 : -1 }
    case 'flag':
      return { field: ['f', a.type, client].join(SEP), op: create ? 'set' : 'del', value: '1' }
    case 'distinct':
      return { field: ['d', a.type, name, client].join(SEP), op: create ? 'set' : 'del', value: '1' }
    case 'unique':
      return { field: ['u', a.type, client].join(SEP), op: create ? 'set' : 'del', value: name }
    case 'multiple':
      return create
        ? { field: ['m', a.type, name, client].join(SEP), op: 'incr', by: a.count ?? 1 }
        : { field: ['m', a.type, name, client].join(SEP), op: 'del' }
    case undefined:
      return undefined
  }
}

/**
 * The change that takes `op` back, given the field's value before it (an add is taken off, a set
 * or removal puts the old value back): for an annotation whose delivery failed after its change.
 */
export function undoOp(op: AnnotationStateOp, before: string | undefined): AnnotationStateOp {
  // taking one off a total that was not there changed nothing: nothing to put back
  if (op.op === 'incr' && (op.by > 0 || before !== undefined)) return { field: op.field, op: 'incr', by: -op.by }
  return before === undefined ? { field: op.field, op: 'del' } : { field: op.field, op: 'set', value: before }
}

type Names = Record<string, { total: number; clientIds: string[]; clipped: boolean }>
type Counts = Record<
  string,
  {
    total: number
    clientIds: Record<string, number>
    totalUnidentified: number
    clipped: boolean
    totalClientIds: number
  }
>

/**
 * The summary of a message's state, keyed by annotation type, in the hosted service's layout
 * (TM7): distinct and unique per name `{total, clientIds, clipped}`, multiple per name with the
 * per-client counts under `clientIds`, flag `{total, clientIds, clipped}`, total `{total}`.
 * Client lists are sorted (a state has no order).
 */
export function summaryOf(state: Record<string, string>): AnnotationSummary {
  const out: Record<string, unknown> = {}
  for (const field of Object.keys(state).sort()) {
    const value = state[field]!
    const [kind, type, a, b] = field.split(SEP) as [string, string, string?, string?]
    if (kind === 't') out[type] = { total: Number(value) }
    else if (kind === 'f') {
      const e = (out[type] ??= { total: 0, clientIds: [], clipped: false }) as Names[string]
      e.total++
      e.clientIds.push(a!)
    } else if (kind === 'd' || kind === 'u') {
      const name = kind === 'd' ? a! : value
      const client = kind === 'd' ? b! : a!
      const e = (((out[type] ??= {}) as Names)[name] ??= { total: 0, clientIds: [], clipped: false })
      e.total++
      e.clientIds.push(client)
    } else if (kind === 'm') {
      const e = (((out[type] ??= {}) as Counts)[a!] ??= {
        total: 0,
        clientIds: {},
        totalUnidentified: 0,
        clipped: false,
        totalClientIds: 0,
      })
      const n = Number(value)
      e.total += n
      if (b) {
        e.clientIds[b] = n
        e.totalClientIds++
      } else e.totalUnidentified += n
    }
  }
  for (const v of Object.values(out)) {
    const e = v as { clientIds?: unknown }
    if (Array.isArray(e.clientIds)) e.clientIds.sort()
    else for (const n of Object.values(v as Names)) if (Array.isArray(n?.clientIds)) n.clientIds.sort()
  }
  return out
}
