import type { Database } from 'bun:sqlite'
import { pack, unpack } from 'msgpackr'
import { formatSerial } from '../../core/model/serial'
import type { HistoryQuery, Message } from '../../core/types'

/** Durable history of persisted channels in SQLite; one row per message, body msgpack-encoded. */
export class SqliteMessageLog {
  private insert
  private lastStmt
  private pruneStmt
  private channelsStmt
  private byIdStmt

  constructor(private readonly db: Database) {
    this.insert = db.prepare(
      'INSERT OR IGNORE INTO messages (app, channel, serial, ts, body, id) VALUES (?, ?, ?, ?, ?, ?)',
    )
    this.lastStmt = db.prepare('SELECT serial FROM messages WHERE app = ? AND channel = ? ORDER BY serial DESC LIMIT 1')
    this.pruneStmt = db.prepare('DELETE FROM messages WHERE ts < ?')
    this.channelsStmt = db.prepare(
      'SELECT DISTINCT channel FROM messages WHERE app = ? AND channel >= ? AND ts >= ? ORDER BY channel LIMIT ?',
    )
    // the index alone answers (serials order by time): a condition on ts would read rows, and
    // without statistics the planner would then scan the channel by its primary key instead
    this.byIdStmt = db.prepare(
      'SELECT serial FROM messages INDEXED BY messages_id WHERE app = ? AND channel = ? AND id = ? AND serial >= ? ORDER BY serial LIMIT 1',
    )
  }

  /**
   * Appends in one transaction. `indexIds`: the ids may be looked up later (`serialOf`); an
   * id that never will be (one the server made for a REST publish) is not indexed, which keeps
   * the append as cheap as without the index.
   */
  append(appId: string, channel: string, messages: Message[], indexIds = false): void {
    const tx = this.db.transaction((ms: Message[]) => {
      for (const m of ms) this.insert.run(appId, channel, m.serial, m.timestamp, pack(m), indexIds ? m.id : null)
    })
    tx(messages)
  }

  /** The serial of the first message appended with `id` (indexed) at or after `minTimestamp`, if any. */
  serialOf(appId: string, channel: string, id: string, minTimestamp: number): string | undefined {
    const row = this.byIdStmt.get(appId, channel, id, formatSerial(minTimestamp, 0)) as { serial: string } | null
    return row?.serial
  }

  lastSerial(appId: string, channel: string): string | undefined {
    return (this.lastStmt.get(appId, channel) as { serial: string } | null)?.serial
  }

  query(appId: string, channel: string, q: HistoryQuery, minTimestamp: number): Message[] {
    const fwd = q.direction === 'forwards'
    const cursorCond = q.cursor === undefined ? '' : fwd ? 'AND serial > $cursor' : 'AND serial < $cursor'
    const sql = `SELECT body FROM messages WHERE app = $app AND channel = $channel AND ts >= $start AND ts <= $end ${cursorCond}
      ORDER BY serial ${fwd ? 'ASC' : 'DESC'} LIMIT $limit`
    const params: Record<string, string | number> = {
      app: appId,
      channel,
      start: Math.max(q.start ?? 0, minTimestamp),
      end: q.end ?? Number.MAX_SAFE_INTEGER,
      limit: q.limit,
    }
    if (q.cursor !== undefined) params.cursor = q.cursor
    const rows = this.db.query(sql).all(params as any) as { body: Uint8Array }[]
    return rows.map((r) => unpack(r.body) as Message)
  }

  /** Channels with retained messages, sorted, from `from` (inclusive). */
  channels(appId: string, from: string, minTimestamp: number, limit: number): string[] {
    return (this.channelsStmt.all(appId, from, minTimestamp, limit) as { channel: string }[]).map((r) => r.channel)
  }

  prune(beforeTimestamp: number): void {
    this.pruneStmt.run(beforeTimestamp)
  }
}
