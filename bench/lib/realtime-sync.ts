/**
 * Presence SYNC as a client collects it: after an ATTACHED with HAS_PRESENCE, SYNC frames whose
 * `channelSerial` is `<syncId>:<cursor>` (the syncId matching `[\w-]+`, as the official client
 * parses it) until one with an empty cursor; a frame without a serial is a whole SYNC by itself;
 * a new syncId starts the SYNC over.
 */
import type { ServerMessage, SyncResult } from './realtime-wire'

interface InProgress {
  id: string
  r: SyncResult
  resolve: (s: SyncResult) => void
}

const fresh = (): SyncResult => ({ members: [], frames: 0, bytes: 0, doneAt: 0 })

export class SyncPages {
  private readonly syncs = new Map<string, InProgress>()

  /** The SYNC to come on `channel`: resolves with its members when its last page arrived. */
  expect(channel: string): Promise<SyncResult> {
    return new Promise((resolve) => this.syncs.set(channel, { id: '', r: fresh(), resolve }))
  }

  /** One SYNC frame of `size` bytes; returns a fault's description, or undefined. */
  page(pm: ServerMessage, size: number): string | undefined {
    const s = this.syncs.get(pm.channel ?? '')
    if (!s) return `SYNC on ${pm.channel} without ATTACHED HAS_PRESENCE`
    const m = /^([\w-]+):(.*)$/.exec(pm.channelSerial ?? '')
    if (pm.channelSerial !== undefined && !m) return `SYNC serial ${pm.channelSerial} is not <syncId>:<cursor>`
    if (m && s.id && m[1] !== s.id) s.r = fresh()
    if (m) s.id = m[1]!
    s.r.members.push(...(pm.presence ?? []))
    s.r.frames++
    s.r.bytes += size
    if (!m || m[2] === '') {
      s.r.doneAt = performance.now()
      this.syncs.delete(pm.channel!)
      s.resolve(s.r)
    }
    return undefined
  }
}
