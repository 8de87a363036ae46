/**
 * The chat state port: what chat keeps beside the room channel's message log. Message contents
 * live in the broker (the create event on the room channel), their versions (updates, deletes) in
 * the channels' version store (channels/ports.ts `VersionStore`, as for any mutable message);
 * this store holds each message's reactions, the registry of active rooms and who is typing. Every backend (memory + SQLite, Redis) implements it; test/chat holds both to these
 * contracts. The store owns retention: state untouched for the message retention window may go.
 */

export type ReactionKind = 'unique' | 'distinct' | 'multiple'
export type ChatAction = 'message.create' | 'message.update' | 'message.delete'

/** One client's reaction of one name (one record per client for `unique`). */
export interface ReactionRecord {
  kind: ReactionKind
  name: string
  clientId: string
  /** Always 1 for unique and distinct; the accumulated count for multiple. */
  count: number
  metadata?: Record<string, unknown>
  timestamp: number
}

/**
 * A reaction change. Adding: `unique` replaces the client's previous unique reaction, `distinct`
 * keeps the first record of a (name, client) pair, `multiple` adds `count` to it. Removing drops
 * the client's record (for `unique` whatever its name).
 */
export interface ReactionOp extends ReactionRecord {
  remove?: boolean
}

export interface MessageState {
  reactions: ReactionRecord[]
}

export interface RoomRecord {
  roomId: string
  lastActivity: number
}

export interface TypingState {
  /** Clients typing after the call, sorted. */
  typers: string[]
  /** Clients whose timeout had passed and who were dropped by this call, sorted. */
  expired: string[]
  /** The client of the call was typing (and had not expired) before it. */
  was: boolean
  /** Earliest expiry among `typers` (ms), if any. */
  next?: number
}

/** Thrown (as a GatewayError by the core) when a message holds this many reaction records. */
export const MAX_REACTION_RECORDS = 1000

/**
 * Field of a reaction record within its message: one per client for unique, one per (name,
 * client) otherwise. Both stores key records by it, so the replacement rules above are one write.
 */
export function reactionField(kind: ReactionKind, name: string, clientId: string): string {
  if (kind === 'unique') return `u\u0000${clientId}`
  return `${kind === 'distinct' ? 'd' : 'm'}\u0000${name}\u0000${clientId}`
}

export interface ChatStore {
  /** State of each message that has any (a serial without state is absent from the map). */
  states(appId: string, room: string, serials: string[]): Promise<Map<string, MessageState>>
  /**
   * Applies `op` atomically and returns every reaction record of the message after it.
   * `changed` is false when nothing changed (repeated distinct, removing what is not there).
   * Adding a new record to a message that holds `max` records rejects with `TooManyReactions`.
   */
  react(
    appId: string,
    room: string,
    serial: string,
    op: ReactionOp,
    max: number,
  ): Promise<{ changed: boolean; reactions: ReactionRecord[] }>
  /** Marks the room active at `now`. */
  touchRoom(appId: string, room: string, now: number): Promise<void>
  /** The room if it was active within the retention window before `now`. */
  room(appId: string, room: string, now: number): Promise<RoomRecord | undefined>
  /** Active rooms sorted by id, strictly after `after`, at most `limit`. */
  rooms(appId: string, after: string | undefined, limit: number, now: number): Promise<RoomRecord[]>
  /**
   * Drops typers whose expiry is at or before `now`, then sets `clientId` typing until
   * `expiresAt` (or not typing when undefined), atomically.
   */
  setTyping(
    appId: string,
    room: string,
    clientId: string,
    expiresAt: number | undefined,
    now: number,
  ): Promise<TypingState>
  /** Drops typers whose expiry is at or before `now` (no client of the call: `was` is false). */
  expireTyping(appId: string, room: string, now: number): Promise<TypingState>
}

/** What a store throws when `react` would exceed the record limit of a message. */
export class TooManyReactions extends Error {
  constructor() {
    super('too many reactions')
  }
}
