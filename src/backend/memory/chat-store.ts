import type { Database } from 'bun:sqlite'
import { pack, unpack } from 'msgpackr'
import {
  TooManyReactions,
  reactionField,
  type ChatStore,
  type MessageState,
  type ReactionOp,
  type ReactionRecord,
  type RoomRecord,
  type TypingState,
} from '../../core/chat/ports'

const PRUNE_EVERY_MS = 60_000

/**
 * Chat state of the embedded backend. Reactions and rooms are in SQLite, beside the
 * persisted history of the room channels, so they survive a restart as messages do; each
 * multi-step write is one transaction. Typing is short-lived and stays in memory.
 */
export class SqliteChatStore implements ChatStore {
  private readonly typing = new Map<string, Map<string, number>>()
  private lastPrune = 0
  private readonly q

  constructor(
    private readonly db: Database,
    private readonly retentionMs: number,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS chat_reactions (
      app TEXT NOT NULL, room TEXT NOT NULL, serial TEXT NOT NULL, field TEXT NOT NULL, count INTEGER NOT NULL, body BLOB NOT NULL, ts INTEGER NOT NULL,
      PRIMARY KEY (app, room, serial, field)) WITHOUT ROWID`)
    db.exec(`CREATE TABLE IF NOT EXISTS chat_rooms (
      app TEXT NOT NULL, room TEXT NOT NULL, active INTEGER NOT NULL, PRIMARY KEY (app, room)) WITHOUT ROWID`)
    db.exec('CREATE INDEX IF NOT EXISTS chat_reactions_ts ON chat_reactions (ts)')
    this.q = {
      reactions: db.prepare('SELECT count, body FROM chat_reactions WHERE app = ? AND room = ? AND serial = ?'),
      reaction: db.prepare('SELECT count FROM chat_reactions WHERE app = ? AND room = ? AND serial = ? AND field = ?'),
      reactionCount: db.prepare('SELECT COUNT(*) AS n FROM chat_reactions WHERE app = ? AND room = ? AND serial = ?'),
      putReaction: db.prepare(
        'INSERT OR REPLACE INTO chat_reactions (app, room, serial, field, count, body, ts) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      delReaction: db.prepare('DELETE FROM chat_reactions WHERE app = ? AND room = ? AND serial = ? AND field = ?'),
      touch: db.prepare(
        'INSERT INTO chat_rooms (app, room, active) VALUES (?, ?, ?) ON CONFLICT (app, room) DO UPDATE SET active = MAX(active, excluded.active)',
      ),
      room: db.prepare('SELECT room, active FROM chat_rooms WHERE app = ? AND room = ? AND active >= ?'),
      rooms: db.prepare(
        'SELECT room, active FROM chat_rooms WHERE app = ? AND room > ? AND active >= ? ORDER BY room LIMIT ?',
      ),
    }
  }

  async states(app: string, room: string, serials: string[]): Promise<Map<string, MessageState>> {
    const out = new Map<string, MessageState>()
    for (const serial of serials) {
      const reactions = this.reactionsOf(app, room, serial)
      if (reactions.length) out.set(serial, { reactions })
    }
    return out
  }

  private reactionsOf(app: string, room: string, serial: string): ReactionRecord[] {
    return (this.q.reactions.all(app, room, serial) as { count: number; body: Uint8Array }[]).map((r) => ({
      ...(unpack(r.body) as ReactionRecord),
      count: r.count,
    }))
  }

  async react(
    app: string,
    room: string,
    serial: string,
    op: ReactionOp,
    max: number,
  ): Promise<{ changed: boolean; reactions: ReactionRecord[] }> {
    this.prune(op.timestamp)
    const { remove, ...record } = op
    const field = reactionField(op.kind, op.name, op.clientId)
    return this.db.transaction(() => {
      let changed: boolean
      if (remove) changed = this.q.delReaction.run(app, room, serial, field).changes > 0
      else {
        const cur = (this.q.reaction.get(app, room, serial, field) as { count: number } | null)?.count
        if (cur === undefined && (this.q.reactionCount.get(app, room, serial) as { n: number }).n >= max)
          throw new TooManyReactions()
        changed = !(op.kind === 'distinct' && cur !== undefined)
        if (changed) {
          const count = op.kind === 'multiple' ? op.count + (cur ?? 0) : 1
          this.q.putReaction.run(app, room, serial, field, count, pack(record), op.timestamp)
        }
      }
      return { changed, reactions: this.reactionsOf(app, room, serial) }
    })()
  }

  async touchRoom(app: string, room: string, now: number): Promise<void> {
    this.prune(now)
    this.q.touch.run(app, room, now)
  }

  async room(app: string, room: string, now: number): Promise<RoomRecord | undefined> {
    const r = this.q.room.get(app, room, now - this.retentionMs) as { room: string; active: number } | null
    return r ? { roomId: r.room, lastActivity: r.active } : undefined
  }

  async rooms(app: string, after: string | undefined, limit: number, now: number): Promise<RoomRecord[]> {
    const rows = this.q.rooms.all(app, after ?? '', now - this.retentionMs, limit) as { room: string; active: number }[]
    return rows.map((r) => ({ roomId: r.room, lastActivity: r.active }))
  }

  async setTyping(
    app: string,
    room: string,
    clientId: string,
    expiresAt: number | undefined,
    now: number,
  ): Promise<TypingState> {
    return this.applyTyping(app, room, now, clientId, expiresAt)
  }

  async expireTyping(app: string, room: string, now: number): Promise<TypingState> {
    return this.applyTyping(app, room, now)
  }

  private applyTyping(app: string, room: string, now: number, clientId?: string, expiresAt?: number): TypingState {
    const k = app + '\u0000' + room
    const typers = this.typing.get(k) ?? new Map<string, number>()
    const expired: string[] = []
    for (const [cid, until] of typers)
      if (until <= now) {
        expired.push(cid)
        typers.delete(cid)
      }
    let was = false
    if (clientId !== undefined) {
      was = typers.has(clientId)
      if (expiresAt !== undefined) typers.set(clientId, expiresAt)
      else typers.delete(clientId)
    }
    if (typers.size) this.typing.set(k, typers)
    else this.typing.delete(k)
    const next = typers.size ? Math.min(...typers.values()) : undefined
    return { typers: [...typers.keys()].sort(), expired: expired.sort(), was, next }
  }

  /** Drops state untouched for the retention window (at most once a minute, on writes). */
  private prune(now: number) {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return
    this.lastPrune = now
    const before = now - this.retentionMs
    this.db.prepare('DELETE FROM chat_reactions WHERE ts < ?').run(before)
    this.db.prepare('DELETE FROM chat_rooms WHERE active < ?').run(before)
  }
}
