import type { Principal } from '../auth/principal'
import type { Limits } from '../limits/limits'
import type { Occupancy as ChannelOccupancy } from '../fanout/occupancy'
import type { AnnotationService } from '../channels/annotation-service'
import type { MutableMessages } from '../channels/mutable-messages'
import type { Broker, Clock, PresenceStore, Timers } from '../ports'
import type { StatsService } from '../stats/stats-service'
import { MessageReactions } from './message-reactions'
import { ChatMessages } from './messages'
import type { ChatStore, RoomRecord } from './ports'
import { RoomEvents } from './room-events'
import { authorizeRoom, checkRoomId, missing, roomChannel } from './rooms'
import { ChatTyping } from './typing'

export interface ChatSettings {
  maxMessageSize: number
  /** A typer not renewed for this long is dropped (ms). */
  typingTimeoutMs: number
}

/** The hosted chat clients renew typing every 10 s; a little grace covers one late renewal. */
export const DEFAULT_TYPING_TIMEOUT_MS = 12_000

export interface RoomView {
  roomId: string
  name: string
  metadata: Record<string, unknown>
}
export interface Occupancy {
  connections: number
  presenceMembers: number
}

/** Rooms listed per store read while filtering by capability. */
const ROOM_CHUNK = 200

/** The chat use cases, on top of the room channels (see rooms.ts) and the chat store. */
export class ChatService {
  readonly messages: ChatMessages
  readonly reactions: MessageReactions
  readonly typing: ChatTyping

  constructor(
    broker: Broker,
    private readonly store: ChatStore,
    private readonly presence: PresenceStore,
    private readonly attached: ChannelOccupancy,
    annotations: AnnotationService,
    changes: MutableMessages,
    stats: StatsService,
    limits: Limits,
    private readonly clock: Clock,
    timers: Timers,
    s: ChatSettings,
  ) {
    const events = new RoomEvents(broker, store, stats, clock)
    this.messages = new ChatMessages(events, store, changes, limits, clock, s.maxMessageSize)
    this.reactions = new MessageReactions(events, store, this.messages, annotations, limits, clock)
    this.typing = new ChatTyping(events, store, limits, clock, timers, s.typingTimeoutMs)
  }

  /**
   * Active rooms (some chat activity within the message retention window) the principal may
   * see (channel-metadata), sorted by id, after `after`; up to `limit + 1` so callers can tell
   * whether there is a next page.
   */
  async rooms(p: Principal, after: string | undefined, limit: number): Promise<RoomView[]> {
    const out: RoomView[] = []
    const now = this.clock.now()
    for (let cursor = after; out.length <= limit;) {
      const batch = await this.store.rooms(p.appId, cursor, ROOM_CHUNK, now)
      for (const r of batch) if (p.capability.allows(roomChannel(r.roomId), 'channel-metadata')) out.push(roomView(r))
      if (batch.length < ROOM_CHUNK) break
      cursor = batch[batch.length - 1]!.roomId
    }
    return out.slice(0, limit + 1)
  }

  /** One room; 404 (40160) when it has not been active within the retention window. */
  async room(p: Principal, roomId: string): Promise<RoomView> {
    const room = checkRoomId(roomId)
    authorizeRoom(p, room, 'channel-metadata')
    const r = await this.store.room(p.appId, room, this.clock.now())
    if (!r) throw missing(`Room "${room}" not found`)
    return roomView(r)
  }

  /**
   * Connections attached to the room channel (event streams and realtime, on every node, as
   * channel details count them) and members present on it. A room nobody uses has zero of both (not 404).
   */
  async occupancy(p: Principal, roomId: string): Promise<Occupancy> {
    const room = checkRoomId(roomId)
    authorizeRoom(p, room, 'channel-metadata')
    const channel = roomChannel(room)
    const [o, presenceMembers] = await Promise.all([
      this.attached.cluster(p.appId, channel),
      this.presence.count(p.appId, channel),
    ])
    return { connections: o.connections, presenceMembers }
  }

  close() {
    this.typing.close()
  }
}

const roomView = (r: RoomRecord): RoomView => ({ roomId: r.roomId, name: r.roomId, metadata: {} })
