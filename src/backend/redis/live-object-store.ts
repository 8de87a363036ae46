import type { LiveObjectBatch, LiveObjectStore, LivePublishOptions } from '../../core/objects/ports'
import { emptyRoot, type LiveObjectRecord } from '../../core/objects/live-state'
import { ROOT } from '../../core/objects/live-wire'
import { GatewayError } from '../../errors'
import { Unpackr } from 'msgpackr'
import { pack, packDraft, serialFromId } from './codec'
import { BUFFERS, withTimeout, type RedisCommander } from './connection'
import type { RedisKeys } from './keys'
import { LIVE_PUBLISH_SCRIPT } from './live-object-scripts'
import { ScriptRunner } from './script-runner'

export interface RedisLiveObjectSettings {
  historyTtlMs: number
  persistedHistoryTtlMs: number
  idempotencyWindowMs: number
  redisTimeoutMs: number
}

/** Records as Lua packs them: times (ms) are 64-bit integers there, numbers here. */
const records = new Unpackr({ useRecords: false, int64AsType: 'number' })

/** Lua writes an empty table as an empty msgpack array: maps of a record are objects again. */
function record(b: Uint8Array): LiveObjectRecord {
  const r = records.unpack(b) as LiveObjectRecord
  if (Array.isArray(r.entries)) r.entries = {}
  if (Array.isArray(r.createEntries)) r.createEntries = {}
  return r
}

/**
 * The plugin's LiveObjects on Redis, shared by every node: a channel's objects are one hash in
 * the channel's slot, changed by the one script that also appends the operations to the channel's
 * stream (live-object-scripts.ts), so state and order cannot part.
 */
export class RedisLiveObjectStore implements LiveObjectStore {
  private readonly script: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly s: RedisLiveObjectSettings,
  ) {
    this.script = new ScriptRunner(cmd, LIVE_PUBLISH_SCRIPT)
  }

  async publish(app: string, channel: string, batch: LiveObjectBatch, opts: LivePublishOptions): Promise<string[]> {
    const ttl = opts.persisted ? this.s.persistedHistoryTtlMs : this.s.historyTtlMs
    const args: Array<string | Buffer> = [
      this.keys.notify(app, channel),
      String(ttl),
      String(this.s.idempotencyWindowMs),
      opts.clientIds ? `${this.keys.idemPrefix(app, channel)}${batch.drafts[0]!.id}` : '',
      String(opts.limits.maxObjects),
      String(opts.limits.maxKeys),
      String(opts.limits.gcGraceMs),
      String(batch.ops.length),
    ]
    batch.ops.forEach((op, i) => args.push(pack(op), packDraft(batch.drafts[i]!)))
    const keys = [this.keys.stream(app, channel), this.keys.liveObjects(app, channel), this.keys.lastId(app, channel)]
    const reply = (await withTimeout(this.script.run(keys, args), this.s.redisTimeoutMs)) as Array<number | string>
    if (Number(reply[0]) < 0) throw new GatewayError(Number(reply[1]) as 92001, String(reply[2]), { status: 400 })
    return reply.slice(1).map((id) => serialFromId(String(id)))
  }

  async remove(app: string, channel: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return
    await withTimeout(
      this.cmd.sendCommand(['HDEL', this.keys.liveObjects(app, channel), ...ids]),
      this.s.redisTimeoutMs,
    )
  }

  async snapshot(app: string, channel: string): Promise<LiveObjectRecord[]> {
    const vals = (await withTimeout(
      this.cmd.sendCommand(['HVALS', this.keys.liveObjects(app, channel)], BUFFERS),
      this.s.redisTimeoutMs,
    )) as Buffer[]
    const recs = vals.map(record)
    const root = recs.findIndex((r) => r.objectId === ROOT)
    const first = root >= 0 ? recs.splice(root, 1)[0]! : emptyRoot()
    return [first, ...recs]
  }
}
