import type {
  LiveHead,
  LiveObjectBatch,
  LiveObjectStore,
  LivePublishOptions,
  Operation,
  StoredEntry,
} from '../../core/objects/ports'
import { emptyRoot, fromLegacy, recordOf, type LiveObjectRecord } from '../../core/objects/live-state'
import { entrySize } from '../../core/objects/live-size'
import { OpAction, ROOT, typeOfId } from '../../core/objects/live-wire'
import { GatewayError } from '../../errors'
import { Unpackr } from 'msgpackr'
import { pack, packDraft, serialFromId } from './codec'
import { BUFFERS, type RedisCommander } from './clients'
import { withTimeout } from './errors'
import type { RedisKeys } from './keys'
import { LIVE_FORGET_SCRIPT, LIVE_MIGRATE_SCRIPT, LIVE_PUBLISH_SCRIPT } from './lua/live-objects'
import { ScriptRunner } from './script-runner'

export interface RedisLiveObjectSettings {
  historyTtlMs: number
  persistedHistoryTtlMs: number
  idempotencyWindowMs: number
  redisTimeoutMs: number
}

/** Records as Lua packs them: times (ms) are 64-bit integers there, numbers here. */
const records = new Unpackr({ useRecords: false, int64AsType: 'number' })

type Stored = LiveHead & { entries?: unknown; createEntries?: unknown }

/** Lua writes an empty table as an empty msgpack array: maps of a record are objects again. */
function unpackHead(b: Uint8Array): Stored {
  const r = records.unpack(b) as Stored
  if (Array.isArray(r.entries)) r.entries = {}
  if (Array.isArray(r.createEntries)) r.createEntries = {}
  return r
}
const isLegacy = (h: Stored) => h.entries !== undefined || h.createEntries !== undefined

/** An operation as the script takes it: with the sizes of the entries it writes (live-size.ts). */
function packOp(op: Operation): Buffer {
  if (op.action === OpAction.MAP_SET) return pack({ ...op, z: entrySize(op.mapSet!.key, op.mapSet!.value) })
  if (op.action === OpAction.MAP_CREATE) {
    const entries: Record<string, unknown> = {}
    for (const [k, e] of Object.entries(op.mapCreate!.entries)) entries[k] = { ...e, z: entrySize(k, e.data) }
    return pack({ ...op, mapCreate: { ...op.mapCreate, entries } })
  }
  return pack(op)
}

/** HGETALL answers a flat `[k, v, ...]` list or an object, depending on the protocol. */
function storedEntries(reply: unknown): Array<[string, StoredEntry]> {
  const out: Array<[string, StoredEntry]> = []
  const add = (k: unknown, v: Buffer) => out.push([String(k), records.unpack(v) as StoredEntry])
  if (!Array.isArray(reply)) for (const [k, v] of Object.entries(reply as Record<string, Buffer>)) add(k, v)
  else for (let i = 0; i + 1 < reply.length; i += 2) add(reply[i], reply[i + 1] as Buffer)
  return out
}

/** Tombstones forgotten per script run (each is a read and maybe a delete). */
const FORGET_BATCH = 500

/**
 * The plugin's LiveObjects on Redis, shared by every node: a channel's object heads in one hash,
 * each map's entries in a hash of their own, all in the channel's slot, changed by the one script
 * that also appends the operations to the channel's stream (lua/live-objects.ts), so state
 * and order cannot part.
 */
export class RedisLiveObjectStore implements LiveObjectStore {
  private readonly script: ScriptRunner
  private readonly migrateScript: ScriptRunner
  private readonly forgetScript: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly s: RedisLiveObjectSettings,
  ) {
    this.script = new ScriptRunner(cmd, LIVE_PUBLISH_SCRIPT)
    this.migrateScript = new ScriptRunner(cmd, LIVE_MIGRATE_SCRIPT)
    this.forgetScript = new ScriptRunner(cmd, LIVE_FORGET_SCRIPT)
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
      String(opts.limits.maxChannelBytes),
      this.keys.liveEntriesPrefix(app, channel),
      String(batch.ops.length),
    ]
    batch.ops.forEach((op, i) => args.push(packOp(op), packDraft(batch.drafts[i]!)))
    const keys = [
      this.keys.stream(app, channel),
      this.keys.liveObjects(app, channel),
      this.keys.lastId(app, channel),
      this.keys.liveTotals(app, channel),
    ]
    // an object of the earlier layout is moved first (each move is one object's, done once)
    for (let tries = 0; ; tries++) {
      const reply = await withTimeout(this.script.run<Array<number | string>>(keys, args), this.s.redisTimeoutMs)
      const kind = Number(reply[0])
      if (kind === -2) {
        // rewritten by an earlier node each time it was moved: give up rather than loop
        if (tries >= 5) throw new GatewayError(50000, 'Internal error')
        await this.migrate(app, channel, String(reply[1]))
        continue
      }
      if (kind < 0) throw new GatewayError(Number(reply[1]) as 92001, String(reply[2]))
      return reply.slice(1).map((id) => serialFromId(String(id)))
    }
  }

  /** Moves one object of the earlier layout to entries of their own (LIVE_MIGRATE_SCRIPT). */
  private async migrate(app: string, channel: string, objectId: string, blob?: Buffer): Promise<void> {
    const heads = this.keys.liveObjects(app, channel)
    blob ??= (await withTimeout(this.cmd.sendCommand(['HGET', heads, objectId], BUFFERS), this.s.redisTimeoutMs)) as
      Buffer | undefined
    if (!blob) return
    const { head, entries } = fromLegacy(unpackHead(blob) as LiveObjectRecord)
    await withTimeout(
      this.migrateScript.run(
        [heads, this.keys.liveEntriesPrefix(app, channel) + objectId, this.keys.liveTotals(app, channel)],
        [objectId, blob, pack(head), pack(entries)],
      ),
      this.s.redisTimeoutMs,
    )
  }

  async remove(app: string, channel: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return
    const prefix = this.keys.liveEntriesPrefix(app, channel)
    await withTimeout(
      Promise.all([
        this.cmd.sendCommand(['HDEL', this.keys.liveObjects(app, channel), ...ids]),
        this.cmd.sendCommand(['UNLINK', ...ids.map((id) => prefix + id)]),
      ]),
      this.s.redisTimeoutMs,
    )
  }

  async removeEntries(
    app: string,
    channel: string,
    entries: Array<{ objectId: string; key: string; timeserial: string }>,
  ): Promise<void> {
    const prefix = this.keys.liveEntriesPrefix(app, channel)
    for (let i = 0; i < entries.length; i += FORGET_BATCH) {
      const args = [prefix]
      for (const e of entries.slice(i, i + FORGET_BATCH)) args.push(e.objectId, e.key, e.timeserial)
      await withTimeout(this.forgetScript.run([this.keys.liveObjects(app, channel)], args), this.s.redisTimeoutMs)
    }
  }

  /**
   * The heads, then each live map's entries (one command each, pipelined): an entry may be newer
   * than its head, never older, which the plugin's rules absorb (an operation delivered after the
   * sync whose effect an entry already holds is a no-op: its serial does not beat the entry's).
   */
  async snapshot(app: string, channel: string): Promise<LiveObjectRecord[]> {
    const heads = this.keys.liveObjects(app, channel)
    let blobs = await withTimeout(this.cmd.sendCommand<Buffer[]>(['HVALS', heads], BUFFERS), this.s.redisTimeoutMs)
    let stored = blobs.map(unpackHead)
    const legacy = stored.map((h, i) => [h, blobs[i]!] as const).filter(([h]) => isLegacy(h))
    if (legacy.length) {
      for (const [h, b] of legacy) await this.migrate(app, channel, h.objectId, b)
      blobs = await withTimeout(this.cmd.sendCommand<Buffer[]>(['HVALS', heads], BUFFERS), this.s.redisTimeoutMs)
      stored = blobs.map(unpackHead)
    }
    const prefix = this.keys.liveEntriesPrefix(app, channel)
    const recs = await withTimeout(
      Promise.all(
        stored.map(async (h): Promise<LiveObjectRecord> => {
          // still of the earlier layout (written again by an earlier node meanwhile): as it reads
          if (isLegacy(h)) return h as LiveObjectRecord
          if (h.tombstone || typeOfId(h.objectId) !== 'map') return recordOf(h, [])
          const reply = await this.cmd.sendCommand(['HGETALL', prefix + h.objectId], BUFFERS)
          return recordOf(h, storedEntries(reply))
        }),
      ),
      this.s.redisTimeoutMs,
    )
    const root = recs.findIndex((r) => r.objectId === ROOT)
    const first = root >= 0 ? recs.splice(root, 1)[0]! : emptyRoot()
    return [first, ...recs]
  }
}
