import { GatewayError } from '../../errors'
import type { Principal } from '../auth/principal'
import { effectiveClientId } from '../auth/principal'
import { draftFromWire, isObject } from '../model/message'
import { appended } from '../model/appends'
import type { Message, MessageDraft, Operation } from '../types'

/**
 * Versions of a message, as pure functions over log entries. A change (update, delete, append) is
 * an entry of kind `mutation` in the channel's log: its own serial and timestamp are the version's,
 * its `mutation` names the message (serial, creation time) and carries the operation's clientId,
 * description and metadata. An update or delete entry holds the whole message as it is after the
 * change (fields the change leaves out are kept: a shallow mixin); an append entry holds the
 * appended fragment, with the message's name and extras carried forward. Subscribers so get every
 * change as it happens, and the latest version is the fold of the entries in serial order.
 */

export const Action = { CREATE: 0, UPDATE: 1, DELETE: 2, APPEND: 5 } as const
export type ChangeAction = 1 | 2 | 5

const ACTION_NAMES: Record<string, ChangeAction> = {
  'message.update': 1,
  'message.delete': 2,
  'message.append': 5,
}

/** What a client asks to change: the action, the message fields it sets, and the operation's details. */
export interface Change {
  action: ChangeAction
  fields: Pick<MessageDraft, 'name' | 'data' | 'encoding' | 'extras'>
  op: Operation
}

/** Whether a wire message asks for a change (action update, delete or append, as a number or a name). */
export function isChange(input: unknown): boolean {
  if (!isObject(input)) return false
  const a = input.action
  return a === 1 || a === 2 || a === 5 || (typeof a === 'string' && a in ACTION_NAMES)
}

/**
 * The change a wire message asks for (a PATCH body, or a realtime MESSAGE with a change action).
 * Its message fields are checked as a publish checks them; `clientId` and `serial` of the body
 * describe the message (the official client sends the whole message back) and are not changes.
 * The operation's clientId is the caller's identified client, or the one the body's `version`
 * names when the credentials allow it (40012 otherwise). No action means an update.
 */
export function parseChange(input: unknown, p: Principal): Change {
  if (!isObject(input)) throw new GatewayError(40001, 'Invalid request body: must be a message object')
  const raw = input.action ?? Action.UPDATE
  const action = typeof raw === 'string' ? ACTION_NAMES[raw] : raw
  if (action !== 1 && action !== 2 && action !== 5)
    throw new GatewayError(
      40003,
      'Invalid action: must be message.update (1), message.delete (2) or message.append (5)',
    )
  const { name, data, encoding, extras } = input
  const draft = draftFromWire({ name, data, encoding, extras }, { ...p, clientId: undefined })
  const fields: Change['fields'] = {}
  if (draft.name !== undefined) fields.name = draft.name
  if (draft.data !== undefined) {
    fields.data = draft.data
    if (draft.encoding !== undefined) fields.encoding = draft.encoding
  }
  if (draft.extras !== undefined) fields.extras = draft.extras
  if (action === Action.APPEND && fields.data === undefined)
    throw new GatewayError(40013, 'Invalid append: data (a string or binary fragment) is required')
  return { action, fields, op: parseOperation(input.version, p) }
}

function parseOperation(v: unknown, p: Principal): Change['op'] {
  if (v !== undefined && v !== null && !isObject(v))
    throw new GatewayError(40001, 'Invalid request body: version must be an object')
  const o = (v ?? {}) as Record<string, unknown>
  const op: Change['op'] = {}
  if (o.clientId !== undefined && o.clientId !== null && typeof o.clientId !== 'string')
    throw new GatewayError(40012, 'Invalid version.clientId: must be a string')
  if (o.clientId === '' || o.clientId === '*') throw new GatewayError(40012, `Invalid clientId "${o.clientId}"`)
  const clientId = effectiveClientId(p, (o.clientId ?? undefined) as string | undefined)
  if (clientId === null)
    throw new GatewayError(
      40012,
      `version.clientId "${String(o.clientId)}" does not match the clientId of the credentials`,
    )
  if (clientId !== undefined) op.clientId = clientId
  if (o.description !== undefined && o.description !== null) {
    if (typeof o.description !== 'string')
      throw new GatewayError(40001, 'Invalid request body: version.description must be a string')
    op.description = o.description
  }
  if (o.metadata !== undefined && o.metadata !== null) {
    if (!isObject(o.metadata)) throw new GatewayError(40001, 'Invalid request body: version.metadata must be an object')
    op.metadata = o.metadata
  }
  return op
}

/** The serial and creation time of the message `m` is a version of (itself when it is the original). */
export const messageRef = (m: Message): { serial: string; timestamp: number } =>
  m.mutation
    ? { serial: m.mutation.serial, timestamp: m.mutation.timestamp }
    : { serial: m.serial, timestamp: m.timestamp }

/**
 * The log entry of `change` applied to the message in its current version `cur`. Append
 * fragments must be of the type of the message's data (40013).
 */
export function changeEntry(cur: Message, change: Change, connectionId?: string): MessageDraft {
  const f = change.fields
  const entry: MessageDraft = {
    id: cur.id,
    kind: 'mutation',
    action: change.action,
    mutation: { ...messageRef(cur), ...change.op },
  }
  const name = f.name ?? cur.name
  if (name !== undefined) entry.name = name
  const extras = f.extras ?? cur.extras
  if (extras !== undefined) entry.extras = extras
  if (cur.clientId !== undefined) entry.clientId = cur.clientId
  if (connectionId !== undefined) entry.connectionId = connectionId
  if (change.action === Action.APPEND) {
    appended(cur, f) // refuses what cannot be appended
    entry.data = f.data
    if (f.encoding !== undefined) entry.encoding = f.encoding
  } else {
    const data = f.data !== undefined ? f : cur
    if (data.data !== undefined) entry.data = data.data
    if (data.encoding !== undefined) entry.encoding = data.encoding
  }
  return entry
}

/**
 * The latest version after `entry` (a change entry) was applied to `state` (the message as
 * published, or in a later version). The result is the message as history shows it: the message's
 * id, serial, creation time and publisher, the entry's content, and the entry's serial, timestamp
 * and operation as its `version`. An append shows as an update of the whole data; a fragment that
 * cannot be appended (a change raced it) leaves the data as it was.
 */
export function fold(state: Message, entry: Message): Message {
  const { serial: _serial, timestamp: _timestamp, ...op } = entry.mutation!
  const out: Message = {
    id: state.id,
    ...messageRef(state),
    action: entry.action === Action.APPEND ? Action.UPDATE : entry.action,
    version: { ...op, serial: entry.serial, timestamp: entry.timestamp },
  }
  if (state.clientId !== undefined) out.clientId = state.clientId
  if (state.connectionId !== undefined) out.connectionId = state.connectionId
  const name = entry.action === Action.APPEND ? state.name : entry.name
  if (name !== undefined) out.name = name
  if (entry.extras !== undefined) out.extras = entry.extras
  let data: Pick<Message, 'data' | 'encoding'> = entry
  if (entry.action === Action.APPEND) {
    try {
      data = appended(state, entry)
    } catch {
      data = state
    }
  }
  if (data.data !== undefined) out.data = data.data
  if (data.encoding !== undefined) out.encoding = data.encoding
  return out
}

/**
 * `state` (a message in a version: the original, or its latest as history shows it) as the log
 * entry of an update (action 1) of its whole data in the place of `entry`, a change of the same
 * message: `entry`'s serial, time and operation, `state`'s content. A subscriber that has not
 * seen the message before gets it whole so (a rewind, a late joiner's first delivery).
 */
export function asUpdateEntry(state: Message, entry: Message): Message {
  const { version: _v, serial: _s, timestamp: _t, action: _a, mutation: _m, kind: _k, ...content } = state
  return {
    ...content,
    serial: entry.serial,
    timestamp: entry.timestamp,
    kind: 'mutation',
    action: Action.UPDATE,
    mutation: entry.mutation,
  }
}

export { isAppend, isWhole, joinAppends } from '../model/appends'
