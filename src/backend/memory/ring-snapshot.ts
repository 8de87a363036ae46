import type { Database } from 'bun:sqlite'
import { pack, unpack } from 'msgpackr'
import type { Message } from '../../core/types'

export interface ChannelSnapshot {
  app: string
  channel: string
  floor: string
  messages: Message[]
}

/**
 * The rings of the embedded broker saved by a graceful shutdown and restored on the next start,
 * so an event-stream client resumes across a restart without loss.
 */
export class RingSnapshot {
  constructor(private readonly db: Database) {}

  save(channels: Iterable<ChannelSnapshot>): number {
    const insert = this.db.prepare(
      'INSERT OR REPLACE INTO ring_snapshot (app, channel, floor, messages) VALUES (?, ?, ?, ?)',
    )
    let n = 0
    this.db.transaction(() => {
      for (const c of channels) {
        insert.run(c.app, c.channel, c.floor, pack(c.messages))
        n++
      }
    })()
    return n
  }

  /** Reads and clears the snapshot. */
  take(): ChannelSnapshot[] {
    const rows = this.db.query('SELECT app, channel, floor, messages FROM ring_snapshot').all() as Array<{
      app: string
      channel: string
      floor: string
      messages: Uint8Array
    }>
    this.db.exec('DELETE FROM ring_snapshot')
    return rows.map((r) => ({
      app: r.app,
      channel: r.channel,
      floor: r.floor,
      messages: unpack(r.messages) as Message[],
    }))
  }
}
