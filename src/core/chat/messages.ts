import { GatewayError } from '../../errors'
import type { Principal } from '../auth/principal'
import { effectiveClientId } from '../auth/principal'
import { userClaimFor } from '../auth/user-claims'
import { MAX_MESSAGE_ID_LENGTH, messageSize } from '../model/message'
import { utf8Length } from '../../lib/encoding'
import { parseSerial } from '../model/serial'
import type { Clock } from '../ports'
import type { HistoryQuery, Message, Mutation } from '../types'
import {
  checkDescription,
  checkHeaders,
  checkMetadata,
  checkText,
  createEvent,
  fromCreateEvent,
  sendInput,
  versionSerial,
  withState,
  type ChatMessage,
  type EditInput,
} from './chat-message'
import type { Limits } from '../limits/limits'
import type { ChatStore, ChatVersion } from './ports'
import type { EventDraft, RoomEvents } from './room-events'
import { authorizeEdit, authorizeRoom, checkRoomId, missing } from './rooms'

/** Room channel events read per step while collecting a history page. */
const SCAN_CHUNK = 1000
/** Steps per page: past them a page ends short, with a `next` that carries on where it stopped. */
const MAX_SCAN_STEPS = 20
const MAX_EDIT_ATTEMPTS = 10

export interface HistoryPage {
  items: ChatMessage[]
  next?: string
}

/** The clientId a chat operation is attributed to (the credentials' identified client, if any). */
export function callerClientId(p: Principal, requested?: unknown): string | undefined {
  if (requested !== undefined && requested !== null && typeof requested !== 'string')
    throw new GatewayError(40012, 'Invalid clientId: must be a string')
  if (requested === '' || requested === '*') throw new GatewayError(40012, `Invalid clientId "${requested}"`)
  const cid = effectiveClientId(p, requested as string | undefined)
  if (cid === null)
    throw new GatewayError(40012, `clientId "${String(requested)}" does not match the clientId of the credentials`)
  return cid
}

/** Chat messages: send, history, one message, update and soft delete. */
export class ChatMessages {
  constructor(
    private readonly events: RoomEvents,
    private readonly store: ChatStore,
    private readonly limits: Limits,
    private readonly clock: Clock,
    private readonly maxMessageSize: number,
  ) {}

  /** Sends a message; with `idempotencyKey` a repeat within the window returns the first one. */
  async send(p: Principal, roomId: string, body: unknown, idempotencyKey?: string): Promise<ChatMessage> {
    const room = checkRoomId(roomId)
    authorizeRoom(p, room, 'publish')
    const input = sendInput(body)
    const event = createEvent(input, callerClientId(p), userClaimFor(p, room))
    this.checkSize(event)
    if (idempotencyKey !== undefined && idempotencyKey.length === 0)
      throw new GatewayError(40003, 'Invalid idempotencyKey param: must not be empty')
    // the key is the room event's message id, kept for the idempotency window
    if (idempotencyKey !== undefined && idempotencyKey.length > MAX_MESSAGE_ID_LENGTH)
      throw new GatewayError(40003, `Invalid idempotencyKey param: longer than ${MAX_MESSAGE_ID_LENGTH} characters`)
    await this.limits.take(p.accountId, 'messages')
    const { serial, fresh } = await this.events.publish(p, room, { ...event, id: idempotencyKey })
    if (!fresh) return this.get(p, room, serial, false)
    // the broker's serial carries its timestamp (ms), as history will report it
    return fromCreateEvent({ ...event, id: '', serial, timestamp: parseSerial(serial)?.ms ?? this.clock.now() })!
  }

  /**
   * A message's content (text, metadata, headers, clientId) counts against MAX_MESSAGE_SIZE; for
   * an edit, so do its own description and metadata (`extra` bytes), stored with the version.
   */
  private checkSize(event: Omit<Message, 'id' | 'serial' | 'timestamp'>, extra = 0) {
    const size = messageSize({ id: '', ...event }) + extra
    if (size > this.maxMessageSize)
      throw new GatewayError(
        40009,
        `Maximum message length exceeded (size was ${size} bytes, limit is ${this.maxMessageSize} bytes)`,
      )
  }

  /**
   * A page of the room's messages (latest versions, soft-deleted ones included) in the query's
   * order; `next` is the cursor of the following page. The page is collected from the room
   * channel, skipping its other events. With `requireRoom`, a room never active is 404.
   */
  async history(p: Principal, roomId: string, q: HistoryQuery, requireRoom: boolean): Promise<HistoryPage> {
    const room = checkRoomId(roomId)
    authorizeRoom(p, room, 'history')
    await this.limits.take(p.accountId, 'history')
    if (requireRoom && !(await this.store.room(p.appId, room, this.clock.now())))
      throw missing(`Room "${room}" not found`)
    const found: ChatMessage[] = []
    let cursor = q.cursor
    let stopped: string | undefined
    for (let step = 0; found.length <= q.limit; step++) {
      if (step === MAX_SCAN_STEPS) {
        stopped = cursor
        break
      }
      const batch = await this.events.history(p.appId, room, { ...q, cursor, limit: SCAN_CHUNK })
      for (const m of batch) {
        const c = fromCreateEvent(m)
        if (c) found.push(c)
        if (found.length > q.limit) break
      }
      if (batch.length < SCAN_CHUNK) break
      cursor = batch[batch.length - 1]!.serial
    }
    const page = found.slice(0, q.limit)
    const next = found.length > q.limit ? page[page.length - 1]!.serial : stopped
    const states = await this.store.states(
      p.appId,
      room,
      page.map((m) => m.serial),
    )
    return { items: page.map((m) => withState(m, states.get(m.serial))), next }
  }

  /** One message in its latest version; 404 when there is no such message. */
  async get(p: Principal, roomId: string, serial: string, authorize = true): Promise<ChatMessage> {
    const room = checkRoomId(roomId)
    if (authorize) {
      authorizeRoom(p, room, 'history')
      await this.limits.take(p.accountId, 'history')
    }
    const m = await this.original(p.appId, room, serial)
    const states = await this.store.states(p.appId, room, [serial])
    return withState(m, states.get(serial))
  }

  /**
   * The versions of a message, oldest first: as created, then as each update and delete left it
   * (their reactions are the message's now). `cursor` is the position (0: the original) of the
   * last version of the previous page; `next` carries on after the page's last.
   */
  async versions(
    p: Principal,
    roomId: string,
    serial: string,
    q: { limit: number; cursor?: string },
  ): Promise<HistoryPage> {
    const room = checkRoomId(roomId)
    authorizeRoom(p, room, 'history')
    await this.limits.take(p.accountId, 'history')
    const original = await this.original(p.appId, room, serial)
    const after = q.cursor === undefined ? -1 : Number(q.cursor)
    if (!Number.isInteger(after) || after < -1) throw new GatewayError(40003, 'Invalid cursor param')
    const [edits, states] = await Promise.all([
      this.store.versions(p.appId, room, serial),
      this.store.states(p.appId, room, [serial]),
    ])
    const reactions = states.get(serial)?.reactions ?? []
    const all: Array<[number, ChatMessage]> = [[0, withState(original, { reactions })]]
    for (const version of edits) all.push([version.n, withState(original, { version, reactions })])
    const rest = all.filter(([n]) => n > after)
    const page = rest.slice(0, q.limit)
    return {
      items: page.map(([, m]) => m),
      next: rest.length > q.limit ? String(page[page.length - 1]![0]) : undefined,
    }
  }

  /** The message as created; 404 (40160) when it is not a retained chat message of the room. */
  async original(appId: string, room: string, serial: string): Promise<ChatMessage> {
    const event = await this.events.find(appId, room, serial)
    const m = event && fromCreateEvent(event)
    if (!m) throw missing(`Message "${serial}" not found in room "${room}"`)
    return m
  }

  /**
   * Updates a message: `merge` keeps what the input leaves out (PATCH), `replace` clears it
   * (the hosted service's PUT). The serial stays; the version is bumped and names the editor.
   */
  async update(
    p: Principal,
    roomId: string,
    serial: string,
    input: EditInput,
    mode: 'merge' | 'replace',
  ): Promise<ChatMessage> {
    const room = checkRoomId(roomId)
    const text = mode === 'replace' || input.text !== undefined ? checkText(input.text) : undefined
    const metadata = mode === 'replace' || input.metadata !== undefined ? checkMetadata(input.metadata) : undefined
    const headers = mode === 'replace' || input.headers !== undefined ? checkHeaders(input.headers) : undefined
    if (text === undefined && metadata === undefined && headers === undefined)
      throw new GatewayError(40001, 'Invalid request body: nothing to update (text, metadata or headers)')
    return this.edit(p, room, serial, 'message.update', input, (cur) => ({
      text: text ?? cur.text,
      messageMetadata: metadata ?? cur.metadata,
      headers: headers ?? cur.headers,
    }))
  }

  /** Soft delete: the message stays in history with action message.delete and empty content. */
  async delete(p: Principal, roomId: string, serial: string, input: EditInput = {}): Promise<ChatMessage> {
    const room = checkRoomId(roomId)
    return this.edit(p, room, serial, 'message.delete', input, () => ({ text: '', messageMetadata: {}, headers: {} }))
  }

  private async edit(
    p: Principal,
    room: string,
    serial: string,
    action: ChatVersion['action'],
    input: EditInput,
    content: (cur: ChatMessage) => Pick<ChatVersion, 'text' | 'messageMetadata' | 'headers'>,
  ): Promise<ChatMessage> {
    const description = checkDescription(input.description)
    const opMetadata =
      input.operationMetadata === undefined || input.operationMetadata === null
        ? undefined
        : checkMetadata(input.operationMetadata, 'metadata')
    const operationBytes =
      (description === undefined ? 0 : utf8Length(description)) +
      (opMetadata === undefined ? 0 : utf8Length(JSON.stringify(opMetadata)))
    const original = await this.original(p.appId, room, serial)
    authorizeEdit(p, room, action === 'message.update' ? 'message-update' : 'message-delete', original.clientId)
    await this.limits.take(p.accountId, 'messages')
    const clientId = callerClientId(p)
    for (let attempt = 0; attempt < MAX_EDIT_ATTEMPTS; attempt++) {
      const state = (await this.store.states(p.appId, room, [serial])).get(serial)
      const cur = withState(original, state)
      if (cur.action === 'message.delete') {
        if (action === 'message.delete') return cur
        throw new GatewayError(40000, `Message "${serial}" has been deleted and cannot be updated`)
      }
      const n = (state?.version?.n ?? 0) + 1
      const version: ChatVersion = {
        n,
        serial: versionSerial(serial, n),
        timestamp: this.clock.now(),
        action,
        ...content(cur),
      }
      this.checkSize(
        createEvent(
          { text: version.text, metadata: version.messageMetadata, headers: version.headers },
          original.clientId,
        ),
        operationBytes,
      )
      if (clientId !== undefined) version.clientId = clientId
      if (description !== undefined) version.description = description
      if (opMetadata !== undefined) version.metadata = opMetadata
      if (!(await this.store.putVersion(p.appId, room, serial, n - 1, version))) continue
      const updated = withState(original, { version, reactions: state?.reactions ?? [] })
      await this.events.publish(p, room, editEvent(updated))
      return updated
    }
    throw new GatewayError(40900, `Message "${serial}" is being changed concurrently; try again`)
  }
}

/**
 * An update or delete event: a change entry of the room channel (kind `mutation`), so that
 * subscribers get it as the hosted service sends it: the message's serial, creation time and
 * author, action 1 or 2, its new content as a create event holds it, and `version` (the version's
 * serial and time, the editor, description and metadata). Message history skips such entries.
 */
function editEvent(m: ChatMessage): EventDraft {
  const { serial, timestamp, clientId, description, metadata } = m.version
  const mutation: Mutation = { serial: m.serial, timestamp: m.timestamp, version: { serial, timestamp } }
  if (clientId !== undefined) mutation.clientId = clientId
  if (description !== undefined) mutation.description = description
  if (metadata !== undefined) mutation.metadata = metadata
  return {
    ...createEvent({ text: m.text, metadata: m.metadata, headers: m.headers }, m.clientId, m.userClaim),
    kind: 'mutation',
    action: m.action === 'message.delete' ? 2 : 1,
    mutation,
  }
}
