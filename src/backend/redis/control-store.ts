import type { BootstrapOutcome, BootstrapSeed, ControlEvent } from '../../core/ports'
import { randomSecret } from '../../lib/crypto'
import { CONTROL_KINDS, CachedControlStore, type ControlKind, type ControlRecord } from '../shared/cached-control-store'
import { withTimeout } from './errors'
import type { RedisCommander, RedisSubscriber } from './clients'
import { BOOTSTRAP_SCRIPT } from './lua/control'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'

/**
 * Control records in Redis hashes (one per kind), cached in memory on every node. A write goes
 * to Redis first, then is announced on a pub/sub channel so every node refreshes that record:
 * a revoked key stops working on all nodes.
 */
export class RedisControlStore extends CachedControlStore {
  private readonly bootstrapScript: ScriptRunner
  /** The last announced change applied (refresh): each waits for the one before. */
  private applied: Promise<void> = Promise.resolve()

  private constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
  ) {
    super()
    this.bootstrapScript = new ScriptRunner(cmd, BOOTSTRAP_SCRIPT)
  }

  static async open(
    cmd: RedisCommander,
    sub: RedisSubscriber,
    keys: RedisKeys,
    timeoutMs: number,
  ): Promise<RedisControlStore> {
    const store = new RedisControlStore(cmd, keys, timeoutMs)
    await store.refuseEarlierLayout()
    await sub.subscribe(keys.controlEvents(), (msg: string) => store.refresh(msg))
    await store.loadAll()
    return store
  }

  /**
   * Keys were renamed for Redis Cluster (hash tags, keys.ts) and no migration is provided: a Redis
   * holding the earlier layout's epoch (`<prefix>epoch`) and none of this one's would otherwise be
   * bootstrapped anew beside the old data, its accounts and keys silently ignored. Refused instead.
   */
  private async refuseEarlierLayout() {
    const [now, before] = await Promise.all([
      withTimeout(this.cmd.sendCommand(['EXISTS', this.keys.epoch()]), this.timeoutMs),
      withTimeout(this.cmd.sendCommand(['EXISTS', `${this.keys.prefix}epoch`]), this.timeoutMs),
    ])
    if (Number(now) === 0 && Number(before) === 1)
      throw new Error(
        `this Redis holds data of an earlier gateway version under REDIS_PREFIX=${this.keys.prefix} (key ${this.keys.prefix}epoch): ` +
          'the key layout changed (hash tags for Redis Cluster) and no migration is provided. Keep the earlier version, ' +
          'or start on an empty Redis or a new REDIS_PREFIX and recreate accounts, apps and keys',
      )
  }

  /** Every control record into the cache. */
  private async loadAll() {
    for (const kind of CONTROL_KINDS) {
      const all = (await withTimeout(this.cmd.sendCommand(['HGETALL', this.keys.control(kind)]), this.timeoutMs)) as
        string[] | Record<string, string>
      const pairs = Array.isArray(all) ? all : Object.entries(all).flat()
      for (let i = 0; i < pairs.length; i += 2)
        this.apply(kind, pairs[i]!, JSON.parse(pairs[i + 1]!), { kind: 'account' })
    }
  }

  async bootstrap(seed: BootstrapSeed, acceptDataLoss: boolean): Promise<BootstrapOutcome> {
    const records = this.seedRecords(seed)
    const [status, epoch] = await withTimeout(
      this.bootstrapScript.run<[BootstrapOutcome['status'], string]>(
        [this.keys.epoch(), this.keys.dataLost(), ...records.map((r) => this.keys.control(r.kind))],
        [seed.epoch, acceptDataLoss ? '1' : '0', ...records.flatMap((r) => [r.id, JSON.stringify(r.value)])],
      ),
      this.timeoutMs,
    )
    if (status === 'lost') return { status }
    // the records of whichever node seeded the store (this one or another) are read back here
    await this.loadAll()
    if (status === 'seeded') for (const r of records) await this.announce(r.kind, r.id, r.event)
    return { status, epoch }
  }

  async epoch() {
    const v = await withTimeout(this.cmd.sendCommand(['GET', this.keys.epoch()]), this.timeoutMs)
    return v === null ? undefined : String(v)
  }

  async markDataLost() {
    await withTimeout(
      this.cmd.sendCommand(['SET', this.keys.dataLost(), new Date().toISOString(), 'NX']),
      this.timeoutMs,
    )
  }

  async secret() {
    const key = this.keys.secret()
    // SET NX then GET: the first node's value stays, every node reads the same one
    await withTimeout(this.cmd.sendCommand(['SET', key, randomSecret(), 'NX']), this.timeoutMs)
    return String(await withTimeout(this.cmd.sendCommand(['GET', key]), this.timeoutMs))
  }

  protected async persist(r: ControlRecord, e: ControlEvent) {
    const write =
      r.value === undefined
        ? ['HDEL', this.keys.control(r.kind), r.id]
        : ['HSET', this.keys.control(r.kind), r.id, JSON.stringify(r.value)]
    await withTimeout(this.cmd.sendCommand(write), this.timeoutMs)
    await this.announce(r.kind, r.id, e)
  }

  /** Tells every node (this one too) that a record changed. */
  private async announce(kind: ControlKind, id: string, e: ControlEvent) {
    await withTimeout(
      this.cmd.sendCommand(['PUBLISH', this.keys.controlEvents(), JSON.stringify({ kind, id, e })]),
      this.timeoutMs,
    )
  }

  /**
   * Another node (or this one) changed a record: load it again. The reads start at once, but each
   * change is applied (and heard by listeners) in the order it was announced: on a cluster the
   * records of each kind live on their own shard, and a read from a slower shard must not let a
   * later change be heard before an earlier one (a listener that waits for its own change's echo
   * may then trust that every change announced before it has been applied).
   */
  private refresh(msg: string) {
    const read = this.read(msg)
    this.applied = this.applied
      .then(async () => {
        const change = await read
        if (change) this.apply(change.kind, change.id, change.value, change.e)
      })
      .catch(() => {}) // as a missed read: a listener's failure must not stop the changes after it
  }

  private async read(msg: string) {
    try {
      const { kind, id, e } = JSON.parse(msg) as { kind: ControlKind; id: string; e: ControlEvent }
      const raw = await this.cmd.sendCommand<string | null>(['HGET', this.keys.control(kind), id])
      return { kind, id, e, value: raw ? (JSON.parse(raw) as object) : undefined }
    } catch {
      // a missed refresh is repaired by the next change; reads keep the last known value
      return undefined
    }
  }

  async ready() {
    try {
      return String(await withTimeout(this.cmd.sendCommand(['PING']), this.timeoutMs)) === 'PONG'
    } catch {
      return false
    }
  }

  async close() {}
}
