import { findMessage } from '../channels/find'
import { IdGenerator } from '../model/ids'
import { messageSize } from '../model/message'
import type { Broker, Clock } from '../ports'
import type { StatsService } from '../stats/stats-service'
import type { HistoryQuery, Message, MessageDraft } from '../types'
import type { ChatStore } from './ports'
import { roomChannel } from './rooms'

/** Who an event is published for (stats are kept per app and account). */
export interface Scope {
  appId: string
  accountId: string
}

export type EventDraft = Omit<MessageDraft, 'id'> & { id?: string }

/**
 * Chat rooms keep their history for the persisted retention (PERSISTED_HISTORY_TTL_MS), whatever
 * the namespace rules say: chat history is what a chat room is for. Every event of the room
 * channel is written the same way, since one Redis stream has one retention.
 */
const OPTS = { persisted: true } as const

/** Rooms are re-marked active at most this often per node (a write to the store each time). */
const TOUCH_EVERY_MS = 5_000
const TOUCH_CACHE_MAX = 10_000

/** The room channel as chat uses it: events in through the broker, history and lookups out. */
export class RoomEvents {
  private readonly ids = new IdGenerator()
  private readonly touched = new Map<string, number>()

  constructor(
    private readonly broker: Broker,
    private readonly store: ChatStore,
    private readonly stats: StatsService,
    private readonly clock: Clock,
  ) {}

  /**
   * Publishes one event on the room channel and marks the room active. With `id` the publish
   * is idempotent (a repeat within the idempotency window gets the first serial, `fresh` false).
   */
  async publish(scope: Scope, room: string, draft: EventDraft): Promise<{ serial: string; fresh: boolean }> {
    const clientIds = draft.id !== undefined
    const d: MessageDraft = { ...draft, id: draft.id ?? `${this.ids.next()}:0` }
    const [res] = await Promise.all([
      this.broker.publish(scope.appId, roomChannel(room), [d], { ...OPTS, clientIds }),
      this.touch(scope.appId, room),
    ])
    if (res.appended > 0) this.stats.messagesPublished(scope.appId, scope.accountId, res.appended, messageSize(d), true)
    return { serial: res.serials[0]!, fresh: res.appended > 0 }
  }

  /** Marks the room active (at most every TOUCH_EVERY_MS per node). */
  async touch(appId: string, room: string) {
    const now = this.clock.now()
    const k = appId + '\u0000' + room
    const last = this.touched.get(k)
    if (last !== undefined && now - last < TOUCH_EVERY_MS && now >= last) return
    if (this.touched.size >= TOUCH_CACHE_MAX) this.touched.clear()
    this.touched.set(k, now)
    await this.store.touchRoom(appId, room, now)
  }

  history(appId: string, room: string, q: HistoryQuery): Promise<Message[]> {
    return this.broker.history(appId, roomChannel(room), q, OPTS)
  }

  /** The event with exactly this serial, if it is retained. */
  find(appId: string, room: string, serial: string): Promise<Message | undefined> {
    return findMessage(this.broker, appId, roomChannel(room), serial, OPTS)
  }
}
