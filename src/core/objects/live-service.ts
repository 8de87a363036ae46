import { GatewayError } from '../../errors'
import type { Principal } from '../auth/principal'
import { authorize } from '../auth/authorize'
import type { Namespaces } from '../control/namespaces'
import type { Clock } from '../ports'
import type { MessageDraft } from '../types'
import { noLimits, type Limits } from '../limits/limits'
import type { LiveObjectStore } from './ports'
import type { LiveLimits, LiveObjectRecord } from './live-state'
import { liveEntries } from './live-state'
import { objectMessageSize } from './live-size'
import { clientOperation, invalidObjects, OpAction, ROOT, type Operation } from './live-wire'

/**
 * The one site code of this deployment: every node stamps it, since every operation of a channel
 * takes its serial from the channel's one sequence (shared/reference/ably-liveobjects.md §5.1).
 */
export const SITE_CODE = 'gw0'

export interface LiveObjectSettings extends LiveLimits {
  /** Bound on the operations of one publish (bytes of their JSON text). */
  maxMessageSize: number
}

/** Where a publish comes from: a realtime protocol message, or a REST request (its message id). */
export interface LiveOrigin {
  connectionId?: string
  msgSerial?: number
  /** Base of the entries' ids (`<id>:<index>`); with `clientIds` they are de-duplicated (REST idempotency). */
  id: string
  clientIds?: boolean
}

/** An operation with what the client sent beside it. */
export interface LiveOp {
  op: Operation
  extras?: Record<string, unknown>
}

/** How often a channel's objects are collected at most (ms; never less often than the grace period). */
const COLLECT_EVERY = 3_600_000

const PUBLISH = 'object-publish'
const SUBSCRIBE = 'object-subscribe'

/**
 * The plugin's LiveObjects on a channel: operations published over realtime or REST become
 * entries (kind `object`) of the channel's log, applied to the channel's objects in the same
 * atomic step, so every transport delivers them in channel order and every sync matches what
 * live clients computed. Reads need `object-subscribe`, writes `object-publish`.
 */
export class LiveObjectService {
  constructor(
    private readonly store: LiveObjectStore,
    private readonly namespaces: Namespaces,
    private readonly clock: Clock,
    readonly s: LiveObjectSettings,
    private readonly limits: Limits = noLimits,
  ) {}

  /** The operations of a realtime OBJECT's `state` (ObjectMessages), validated. */
  parseState(state: unknown): LiveOp[] {
    if (!Array.isArray(state) || state.length === 0) throw invalidObjects('state must be a non-empty array')
    return state.map((m, i) => {
      if (typeof m !== 'object' || m === null) throw invalidObjects(`state[${i}] must be an object`)
      const { operation, extras } = m as { operation?: unknown; extras?: unknown }
      const op = clientOperation(operation, `state[${i}].operation`)
      if (extras !== undefined && (typeof extras !== 'object' || extras === null || Array.isArray(extras)))
        throw invalidObjects(`state[${i}].extras must be an object`)
      return extras ? { op, extras: extras as Record<string, unknown> } : { op }
    })
  }

  /**
   * Publishes operations on the channel: refused whole when one is invalid or over a bound;
   * resolves with one serial per operation once they are applied and durable.
   */
  async publish(p: Principal, channel: string, ops: LiveOp[], origin: LiveOrigin): Promise<string[]> {
    authorize(p, channel, PUBLISH)
    // counted as the hosted service and the client's own check count it (live-size.ts)
    const size = ops.reduce((n, o) => n + objectMessageSize(o.op, o.extras), 0)
    if (size > this.s.maxMessageSize)
      throw new GatewayError(
        40009,
        `Maximum size of object messages that can be published at once exceeded (was ${size} bytes, against a limit of ${this.s.maxMessageSize} bytes)`,
      )
    const clientId = p.clientId !== undefined && p.clientId !== '*' ? p.clientId : undefined
    const drafts: MessageDraft[] = ops.map(({ op, extras }, i) => {
      const d: MessageDraft = { id: `${origin.id}:${i}`, kind: 'object', data: JSON.stringify(op) }
      if (clientId !== undefined) d.clientId = clientId
      if (origin.connectionId !== undefined) d.connectionId = origin.connectionId
      if (extras) d.extras = extras
      return d
    })
    // each operation is a state update of the account's (LIMIT_OBJECT_WRITES_PER_SECOND)
    await this.limits.take(p.accountId, 'objectWrites', ops.length)
    const persisted = await this.namespaces.isPersisted(p.appId, channel)
    return this.store.publish(
      p.appId,
      channel,
      { ops: ops.map((o) => o.op), drafts },
      { persisted, clientIds: origin.clientIds, findable: origin.connectionId !== undefined, limits: this.s },
    )
  }

  /** A REST read: a state query of the account's (LIMIT_OBJECT_READS_PER_SECOND); a realtime sync is not one. */
  async query(p: Principal, channel: string): Promise<LiveObjectRecord[]> {
    authorize(p, channel, SUBSCRIBE)
    await this.limits.take(p.accountId, 'objectReads')
    const recs = await this.store.snapshot(p.appId, channel)
    this.collectSoon(p.appId, channel, recs)
    return recs
  }

  /** Every object of the channel, `root` first (what an OBJECT_SYNC carries). */
  async snapshot(p: Principal, channel: string): Promise<LiveObjectRecord[]> {
    authorize(p, channel, SUBSCRIBE)
    const recs = await this.store.snapshot(p.appId, channel)
    this.collectSoon(p.appId, channel, recs)
    return recs
  }

  /** When each channel's objects were last collected here (ms), bounded. */
  private readonly collected = new Map<string, number>()

  /**
   * Garbage collection, at most once per COLLECT_EVERY per channel and node, after a sync or a
   * REST read read the channel's objects anyway: an object no longer reachable from root whose
   * last operation is older than the grace period is tombstoned by the server (OBJECT_DELETE,
   * delivered like any operation), one tombstoned longer than the grace period is forgotten, and
   * so are removed map keys (a write no longer scans its map for them). Clients forget tombstones
   * after the same period (objectsGCGracePeriod).
   */
  private collectSoon(appId: string, channel: string, recs: LiveObjectRecord[]) {
    const k = `${appId}\u0000${channel}`
    const now = this.clock.now()
    const last = this.collected.get(k)
    if (last !== undefined && now - last < Math.min(COLLECT_EVERY, this.s.gcGraceMs)) return
    if (this.collected.size >= 10_000) this.collected.clear()
    this.collected.set(k, now)
    void this.collect(appId, channel, recs, now).catch(() => {
      /* tried again at a later sync */
    })
  }

  private async collect(appId: string, channel: string, recs: LiveObjectRecord[], now: number) {
    const before = now - this.s.gcGraceMs
    const byId = new Map(recs.map((r) => [r.objectId, r]))
    const reachable = new Set<string>([ROOT])
    const queue = [ROOT]
    while (queue.length) {
      const rec = byId.get(queue.pop()!)
      if (!rec || rec.tombstone) continue
      for (const d of liveEntries(rec).values())
        if (d.objectId !== undefined && !reachable.has(d.objectId)) {
          reachable.add(d.objectId)
          queue.push(d.objectId)
        }
    }
    const serialMs = (r: LiveObjectRecord) => Number(r.serial?.slice(0, r.serial.indexOf('-')) ?? NaN)
    const orphans = recs.filter((r) => !reachable.has(r.objectId) && !r.tombstone && serialMs(r) < before)
    if (orphans.length) {
      const ops: Operation[] = orphans.map((r) => ({
        action: OpAction.OBJECT_DELETE,
        objectId: r.objectId,
        objectDelete: {},
      }))
      const id = `gc-${now}`
      const drafts: MessageDraft[] = ops.map((op, i) => ({
        id: `${id}:${i}`,
        kind: 'object',
        data: JSON.stringify(op),
      }))
      const persisted = await this.namespaces.isPersisted(appId, channel)
      await this.store.publish(appId, channel, { ops, drafts }, { persisted, limits: this.s })
    }
    const expired = recs.filter((r) => r.tombstone && (r.tombstonedAt ?? Infinity) < before).map((r) => r.objectId)
    await this.store.remove(appId, channel, expired)
    // removed keys past the grace period (clients forget them after the same period)
    const keys: Array<{ objectId: string; key: string; timeserial: string }> = []
    for (const r of recs)
      for (const [key, e] of Object.entries(r.entries ?? {}))
        if (e.tombstone && e.timeserial && (e.serialTimestamp ?? 0) < before)
          keys.push({ objectId: r.objectId, key, timeserial: e.timeserial })
    if (keys.length) await this.store.removeEntries(appId, channel, keys)
  }

  now(): number {
    return this.clock.now()
  }
}
