import type { Database } from 'bun:sqlite'
import { randomId } from '../../lib/crypto'
import type { QueueStore } from '../../core/ports'
import type { QueuedMessage } from '../../core/types'

type Row = { id: number; tag: string; channel: string; message: string; enqueued: number; deliveries: number }

/**
 * App queues of the embedded backend, in SQLite so what a rule queued survives a restart until it
 * is acknowledged or expires: one row per message, first-in first-out by row id, with the time it
 * becomes visible again and how often it was handed out. Each call is one transaction.
 */
export class SqliteQueueStore implements QueueStore {
  private readonly q
  private readonly pushTx
  private readonly receiveTx
  private readonly ackTx

  constructor(db: Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS queue_items (
      id INTEGER PRIMARY KEY, queue TEXT NOT NULL, tag TEXT NOT NULL, channel TEXT NOT NULL, message TEXT NOT NULL,
      enqueued INTEGER NOT NULL, visible_at INTEGER NOT NULL, deliveries INTEGER NOT NULL)`)
    db.exec('CREATE INDEX IF NOT EXISTS queue_items_queue ON queue_items (queue, id)')
    db.exec('CREATE UNIQUE INDEX IF NOT EXISTS queue_items_tag ON queue_items (queue, tag)')
    this.q = {
      insert: db.prepare(
        'INSERT INTO queue_items (queue, tag, channel, message, enqueued, visible_at, deliveries) VALUES (?, ?, ?, ?, ?, ?, 0)',
      ),
      size: db.prepare('SELECT COUNT(*) AS n FROM queue_items WHERE queue = ?'),
      trim: db.prepare(
        'DELETE FROM queue_items WHERE id IN (SELECT id FROM queue_items WHERE queue = ? ORDER BY id LIMIT ?)',
      ),
      expire: db.prepare('DELETE FROM queue_items WHERE queue = ? AND enqueued < ?'),
      visible: db.prepare(
        'SELECT id, tag, channel, message, enqueued, deliveries FROM queue_items WHERE queue = ? AND visible_at <= ? ORDER BY id LIMIT ?',
      ),
      hide: db.prepare('UPDATE queue_items SET visible_at = ?, deliveries = deliveries + 1 WHERE id = ?'),
      ack: db.prepare('DELETE FROM queue_items WHERE queue = ? AND tag = ?'),
      counts: db.prepare(
        'SELECT COUNT(*) AS total, COALESCE(SUM(visible_at > ?), 0) AS hidden FROM queue_items WHERE queue = ? AND enqueued >= ?',
      ),
      drop: db.prepare('DELETE FROM queue_items WHERE queue = ?'),
    }
    this.pushTx = db.transaction(
      (
        queueId: string,
        items: Array<{ channel: string; message: Record<string, unknown> }>,
        maxLength: number,
        now: number,
      ) => {
        for (const it of items)
          this.q.insert.run(queueId, randomId(16), it.channel, JSON.stringify(it.message), now, now)
        const over = (this.q.size.get(queueId) as { n: number }).n - maxLength
        return over > 0 ? this.q.trim.run(queueId, over).changes : 0
      },
    )
    this.receiveTx = db.transaction(
      (queueId: string, max: number, visibilityMs: number, ttlMs: number, now: number) => {
        this.q.expire.run(queueId, now - ttlMs)
        const rows = this.q.visible.all(queueId, now, max) as Row[]
        for (const r of rows) this.q.hide.run(now + visibilityMs, r.id)
        return rows
      },
    )
    this.ackTx = db.transaction((queueId: string, tags: string[]) => {
      let n = 0
      for (const tag of new Set(tags)) n += this.q.ack.run(queueId, tag).changes
      return n
    })
  }

  async push(
    queueId: string,
    items: Array<{ channel: string; message: Record<string, unknown> }>,
    maxLength: number,
    now: number,
  ) {
    return this.pushTx(queueId, items, maxLength, now) as number
  }

  async receive(
    queueId: string,
    max: number,
    visibilityMs: number,
    ttlMs: number,
    now: number,
  ): Promise<QueuedMessage[]> {
    return (this.receiveTx(queueId, max, visibilityMs, ttlMs, now) as Row[]).map((r) => ({
      deliveryTag: r.tag,
      channel: r.channel,
      message: JSON.parse(r.message) as Record<string, unknown>,
      enqueued: r.enqueued,
      redelivered: r.deliveries,
    }))
  }

  async ack(queueId: string, tags: string[]) {
    return this.ackTx(queueId, tags) as number
  }

  async counts(queueId: string, ttlMs: number, now: number) {
    const r = this.q.counts.get(now, queueId, now - ttlMs) as { total: number; hidden: number }
    return { ready: r.total - r.hidden, unacknowledged: r.hidden, total: r.total }
  }

  async drop(queueId: string) {
    this.q.drop.run(queueId)
  }
}
