import { GatewayError } from '../../errors'
import type { Principal } from '../auth/principal'
import { effectiveClientId } from '../auth/principal'
import { userClaimFor } from '../auth/user-claims'
import { MAX_MESSAGE_ID_LENGTH, messageSize } from '../model/message'
import { parseSerial } from '../model/serial'
import type { Clock } from '../ports'
import type { HistoryQuery, Message, Operation } from '../types'
import type { Found, MutableMessages } from '../channels/mutable-messages'
import { Action, fold } from '../channels/versions'
import {
  checkDescription,
  checkHeaders,
  checkMetadata,
  checkText,
  createEvent,
  fromCreateEvent,
  fromVersion,
  sendInput,
  withState,
  type ChatMessage,
  type EditInput,
  type SendInput,
} from './chat-message'
import type { Limits } from '../limits/limits'
import type { ChatStore } from './ports'
import type { RoomEvents } from './room-events'
import { authorizeRoom, checkRoomId, missing, roomChannel } from './rooms'

/** Room channel events read per step while collecting a history page. */
const SCAN_CHUNK = 1000
/** Steps per page: past them a page ends short, with a `next` that carries on where it stopped. */
const MAX_SCAN_STEPS = 20

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
    private readonly changes: MutableMessages,
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
    if (this.limits.channelRated) await this.limits.takeChannel(p.appId, roomChannel(room), 1)
    await this.limits.take(p.accountId, 'messages')
    const { serial, fresh } = await this.events.publish(p, room, { ...event, id: idempotencyKey })
    if (!fresh) return this.get(p, room, serial, false)
    // the broker's serial carries its timestamp (ms), as history will report it
    return fromCreateEvent({ ...event, id: '', serial, timestamp: parseSerial(serial)?.ms ?? this.clock.now() })!
  }

  /**
   * A message's content (text, metadata, headers, clientId) counts against MAX_MESSAGE_SIZE (an
   * edit's, with its own description and metadata, is checked where it is made: mutable-messages.ts).
   */
  private checkSize(event: Omit<Message, 'id' | 'serial' | 'timestamp'>) {
    const size = messageSize({ id: '', ...event })
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
    const serials = page.map((m) => m.serial)
    const [latest, states] = await Promise.all([
      this.changes.latestOf(p.appId, roomChannel(room), serials),
      this.store.states(p.appId, room, serials),
    ])
    const current = (m: ChatMessage) => {
      const v = latest.get(m.serial)
      return (v && fromVersion(v)) ?? m
    }
    return { items: page.map((m) => withState(current(m), states.get(m.serial))), next }
  }

  /** One message in its latest version; 404 when there is no such message. */
  async get(p: Principal, roomId: string, serial: string, authorize = true): Promise<ChatMessage> {
    const room = checkRoomId(roomId)
    if (authorize) {
      authorizeRoom(p, room, 'history')
      await this.limits.take(p.accountId, 'history')
    }
    const { message } = await this.find(p.appId, room, serial)
    return this.withReactions(p.appId, room, message)
  }

  /**
   * The versions of a message, oldest first: as created, then as each update and delete left it
   * (their reactions are the message's now). `cursor` is the version serial of the last version
   * of the previous page; `next` carries on after the page's last.
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
    const { found } = await this.find(p.appId, room, serial)
    const [entries, states] = await Promise.all([
      this.changes.versionsOf(p.appId, roomChannel(room), found, {
        cursor: q.cursor,
        limit: q.limit + 1,
        direction: 'forwards',
      }),
      this.store.states(p.appId, room, [serial]),
    ])
    const reactions = states.get(serial)
    const all = entries.map((m) =>
      withState(fromVersion(m.kind === 'mutation' ? fold(found.message, m) : m)!, reactions),
    )
    const page = all.slice(0, q.limit)
    return { items: page, next: all.length > q.limit ? page[page.length - 1]!.version.serial : undefined }
  }

  /** The message as created; 404 (40160) when it is not a retained chat message of the room. */
  async original(appId: string, room: string, serial: string): Promise<ChatMessage> {
    const event = await this.events.find(appId, room, serial)
    const m = event && fromCreateEvent(event)
    if (!m) throw missing(`Message "${serial}" not found in room "${room}"`)
    return m
  }

  /** The message in its latest version, with what the version store holds of it; 404 (40160) when there is none. */
  private async find(appId: string, room: string, serial: string): Promise<{ found: Found; message: ChatMessage }> {
    const found = await this.changes.find(appId, roomChannel(room), serial, true)
    const message = found && fromVersion(found.message)
    if (!message) throw missing(`Message "${serial}" not found in room "${room}"`)
    return { found: found!, message }
  }

  private async withReactions(appId: string, room: string, m: ChatMessage): Promise<ChatMessage> {
    return withState(m, (await this.store.states(appId, room, [m.serial])).get(m.serial))
  }

  /**
   * Updates a message: `merge` keeps what the input leaves out (PATCH), `replace` clears it
   * (the hosted service's PUT). The serial stays; the version is the change's and names the editor.
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
    return this.edit(p, room, serial, Action.UPDATE, input, (cur) => {
      if (cur.action === 'message.delete')
        throw new GatewayError(40000, `Message "${serial}" has been deleted and cannot be updated`)
      return { text: text ?? cur.text, metadata: metadata ?? cur.metadata, headers: headers ?? cur.headers }
    })
  }

  /** Soft delete: the message stays in history with action message.delete and empty content. */
  async delete(p: Principal, roomId: string, serial: string, input: EditInput = {}): Promise<ChatMessage> {
    const room = checkRoomId(roomId)
    return this.edit(p, room, serial, Action.DELETE, input, (cur) =>
      cur.action === 'message.delete' ? undefined : { text: '', metadata: {}, headers: {} },
    )
  }

  /**
   * An update or delete, made through the channel's mutable-messages path (one version store for
   * channels and rooms, see channels/mutable-messages.ts): the change entry on the room channel
   * holds the message as a create event does (so subscribers get it as the hosted service sends
   * it: the message's serial, action 1 or 2, its new content, and `version`), and the version
   * store records it. `content` answers the new content from the current version (undefined:
   * no change, as when deleting a deleted message).
   */
  private async edit(
    p: Principal,
    room: string,
    serial: string,
    action: typeof Action.UPDATE | typeof Action.DELETE,
    input: EditInput,
    content: (cur: ChatMessage) => SendInput | undefined,
  ): Promise<ChatMessage> {
    const description = checkDescription(input.description)
    const opMetadata =
      input.operationMetadata === undefined || input.operationMetadata === null
        ? undefined
        : checkMetadata(input.operationMetadata, 'metadata')
    const clientId = callerClientId(p)
    // the changed message carries the user claim of whoever changed it (CHA-M2h), not the sender's
    const claim = userClaimFor(p, room)
    const op: Operation = {}
    if (clientId !== undefined) op.clientId = clientId
    if (description !== undefined) op.description = description
    if (opMetadata !== undefined) op.metadata = opMetadata
    await this.find(p.appId, room, serial)
    const { message } = await this.changes.changeWith(
      p,
      roomChannel(room),
      serial,
      action,
      (m) => {
        const cur = fromVersion(m)
        if (!cur) throw missing(`Message "${serial}" not found in room "${room}"`)
        const next = content(cur)
        if (!next) return undefined
        const { data, encoding, extras } = createEvent(next, cur.clientId, claim)
        return { fields: { data, encoding, extras }, op }
      },
      { where: `room "${room}"`, persisted: true },
    )
    await this.events.touch(p.appId, room)
    return this.withReactions(p.appId, room, fromVersion(message)!)
  }
}
