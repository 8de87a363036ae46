import { GatewayError } from '../../errors'
import type { Principal } from '../auth/principal'
import type { Clock, Timers } from '../ports'
import type { Limits } from '../limits/limits'
import { callerClientId } from './messages'
import type { ChatStore, TypingState } from './ports'
import type { RoomEvents, Scope } from './room-events'
import { CHAT_EVENTS, authorizeRoom, checkRoomId } from './rooms'

export interface TypingEvent {
  currentlyTyping: string[]
  change: { clientId: string; type: typeof CHAT_EVENTS.typingStarted | typeof CHAT_EVENTS.typingStopped }
}

interface Pending {
  scope: Scope
  room: string
  at: number
  /** Cancels the timer. */
  cancel: () => void
}

/** Slack after an expiry before the timer looks, so the clock has surely passed it. */
const TIMER_SLACK_MS = 20

/**
 * Typing indicators. A typer stays in the room's set until they stop or `timeoutMs` passes
 * without a renewal; every start (or renewal) and every stop is a `typing.started` /
 * `typing.stopped` event on the room channel carrying the whole current set. Expiry is decided
 * with the injected clock by the store; a timer only makes this node look when the earliest
 * typer is due (`sweep()` does the same at once, for tests and shutdown).
 */
export class ChatTyping {
  private readonly pending = new Map<string, Pending>()

  constructor(
    private readonly events: RoomEvents,
    private readonly store: ChatStore,
    private readonly limits: Limits,
    private readonly clock: Clock,
    private readonly timers: Timers,
    private readonly timeoutMs: number,
    private readonly onError: (e: unknown) => void = () => {},
  ) {}

  async set(p: Principal, roomId: string, input: { clientId?: unknown; isTyping: unknown }): Promise<TypingEvent> {
    const room = checkRoomId(roomId)
    authorizeRoom(p, room, 'publish')
    if (typeof input.isTyping !== 'boolean')
      throw new GatewayError(40001, 'Invalid request body: isTyping must be true or false')
    const clientId = callerClientId(p, input.clientId)
    if (clientId === undefined)
      throw new GatewayError(
        40012,
        'Typing needs an identified client: use credentials with a clientId or give clientId',
      )
    await this.limits.take(p.accountId, 'messages')
    const now = this.clock.now()
    const st = await this.store.setTyping(
      p.appId,
      room,
      clientId,
      input.isTyping ? now + this.timeoutMs : undefined,
      now,
    )
    await this.emitExpired(p, room, st)
    const event: TypingEvent = {
      currentlyTyping: st.typers,
      change: { clientId, type: input.isTyping ? CHAT_EVENTS.typingStarted : CHAT_EVENTS.typingStopped },
    }
    // a stop by someone who was not typing changes nothing and says nothing
    if (input.isTyping || st.was) await this.emit(p, room, event)
    this.schedule(p, room, st.next)
    return event
  }

  /** Emits the expiries that are due in every room this node watches. */
  async sweep(): Promise<void> {
    const now = this.clock.now()
    const due = [...this.pending.values()].filter((x) => x.at <= now)
    await Promise.all(due.map((x) => this.expire(x.scope, x.room)))
  }

  /** Rooms this node will look at again for expiries. */
  get watching(): number {
    return this.pending.size
  }

  private async expire(scope: Scope, room: string): Promise<void> {
    const k = key(scope.appId, room)
    const x = this.pending.get(k)
    if (x) {
      x.cancel()
      this.pending.delete(k)
    }
    const st = await this.store.expireTyping(scope.appId, room, this.clock.now())
    await this.emitExpired(scope, room, st)
    this.schedule(scope, room, st.next)
  }

  private async emitExpired(scope: Scope, room: string, st: TypingState) {
    for (const clientId of st.expired) {
      await this.emit(scope, room, {
        currentlyTyping: st.typers,
        change: { clientId, type: CHAT_EVENTS.typingStopped },
      })
    }
  }

  private async emit(scope: Scope, room: string, e: TypingEvent) {
    await this.events.publish(scope, room, {
      name: e.change.type,
      clientId: e.change.clientId,
      data: JSON.stringify(e),
      encoding: 'json',
    })
  }

  /** Looks again at `at` (the earliest expiry), unless an earlier look is already planned. */
  private schedule(scope: Scope, room: string, at: number | undefined) {
    if (at === undefined) return
    const k = key(scope.appId, room)
    const cur = this.pending.get(k)
    if (cur && cur.at <= at) return
    if (cur) cur.cancel()
    const entry = { scope: { appId: scope.appId, accountId: scope.accountId }, room, at, cancel: () => {} }
    entry.cancel = this.timers.after(Math.max(0, at - this.clock.now()) + TIMER_SLACK_MS, () => {
      if (this.pending.get(k) !== entry) return
      this.expire(scope, room).catch((e) => this.onError(e))
    })
    this.pending.set(k, entry)
  }

  /** Stops every timer (shutdown). */
  close() {
    for (const x of this.pending.values()) x.cancel()
    this.pending.clear()
  }
}

const key = (appId: string, room: string) => appId + '\u0000' + room
