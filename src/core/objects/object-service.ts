import { GatewayError } from '../../errors'
import { utf8Length } from '../../lib/encoding'
import type { Principal } from '../auth/principal'
import { authorize } from '../auth/authorize'
import type { Namespaces } from '../control/namespaces'
import type { Hub } from '../fanout/hub'
import type { Broker, Clock } from '../ports'
import type { Direction } from '../types'
import { ObjectEvents } from './events'
import { noLimits, type Limits } from '../limits/limits'
import { checkPatch } from './merge'
import { checkNamespace, checkObjectId, objectChannel, parseCursor } from './names'
import { MAX_OBJECT_BYTES, type NamespaceSummary, type ObjectChange, type ObjectState, type ObjectStore } from './ports'

/** Versions are decimal counters (see ports): anything longer is no version of ours. */
const MAX_VERSION_LENGTH = 64

export interface ObjectHistoryParams {
  start?: number
  end?: number
  limit: number
  direction: Direction
  cursor?: string
}
export interface Subscription {
  connectionId: string
  clientId: string | null
}
export interface DeleteResult {
  objectId: string
  deleted: true
  version: string
  timestamp: number
}

const READ = 'object-subscribe'
const WRITE = 'object-publish'

/** 404 with 40160, not the table's 403: a missing object or namespace, as the interface spec states. */
const missingObject = (ns: string, id: string) =>
  new GatewayError(40160, `Object "${id}" not found in namespace "${ns}"`, { status: 404 })
const missingNamespace = (ns: string) => new GatewayError(40160, `Namespace "${ns}" not found`, { status: 404 })

/**
 * The LiveObjects use cases. Reads need `object-subscribe` and writes `object-publish` on the
 * namespace (an object's channel is a sub-channel of it, authorised as the namespace). A namespace
 * exists while it holds an object; an object is known while it exists or has retained history.
 * Every read (namespaces, objects, history, subscriptions) is charged one `objectReads`, every
 * update or delete one `objectWrites` (the spec's state queries and state updates per account).
 */
export class ObjectService {
  private readonly events: ObjectEvents

  constructor(
    private readonly store: ObjectStore,
    broker: Broker,
    namespaces: Namespaces,
    private readonly hub: Hub,
    private readonly clock: Clock,
    private readonly limits: Limits = noLimits,
  ) {
    this.events = new ObjectEvents(store, broker, namespaces)
  }

  private async read(p: Principal, namespace: unknown): Promise<string> {
    const ns = checkNamespace(namespace)
    authorize(p, ns, READ)
    await this.limits.take(p.accountId, 'objectReads')
    return ns
  }

  /** Namespaces the principal may read, sorted by id; up to `limit + 1` (the extra one means "more"). */
  async listNamespaces(p: Principal, after: string | undefined, limit: number): Promise<NamespaceSummary[]> {
    await this.limits.take(p.accountId, 'objectReads')
    const visible: NamespaceSummary[] = []
    for (let cursor = after; ;) {
      const batch = await this.store.namespaces(p.appId, { after: cursor, limit: limit + 1 })
      for (const n of batch) {
        if (!p.capability.allows(n.namespaceId, READ)) continue
        visible.push(n)
        if (visible.length > limit) return visible
      }
      if (batch.length <= limit) return visible
      cursor = batch[batch.length - 1]!.namespaceId
    }
  }

  async namespace(p: Principal, namespace: string): Promise<NamespaceSummary> {
    const ns = await this.read(p, namespace)
    const summary = await this.store.namespace(p.appId, ns)
    if (!summary) throw missingNamespace(ns)
    return summary
  }

  /** Objects of the namespace by id; up to `limit + 1` (the extra one means "more"). */
  async list(
    p: Principal,
    namespace: string,
    q: { prefix: string; after?: string; limit: number },
  ): Promise<ObjectState[]> {
    const ns = await this.read(p, namespace)
    if (!(await this.store.namespace(p.appId, ns))) throw missingNamespace(ns)
    return this.store.list(p.appId, ns, { ...q, limit: q.limit + 1 })
  }

  async get(p: Principal, namespace: string, objectId: string): Promise<ObjectState> {
    const ns = await this.read(p, namespace)
    const id = checkObjectId(objectId)
    const state = await this.store.get(p.appId, ns, id)
    if (!state) throw missingObject(ns, id)
    return state
  }

  /** PATCH: merges `data` (see mergePatch), conditionally on `version`; creates the object when absent. */
  async update(p: Principal, namespace: string, objectId: string, body: unknown): Promise<ObjectState> {
    const ns = checkNamespace(namespace)
    const id = checkObjectId(objectId)
    authorize(p, ns, WRITE)
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new GatewayError(40001, 'Invalid request body: must be an object with data')
    const { data, version } = body as { data?: unknown; version?: unknown }
    const patch = checkPatch(data)
    // the patch is kept in the object's history and published with the change: bounded like state
    const patchBytes = utf8Length(JSON.stringify(patch))
    if (patchBytes > MAX_OBJECT_BYTES)
      throw new GatewayError(40009, `Object patch too large (${patchBytes} bytes, limit is ${MAX_OBJECT_BYTES} bytes)`)
    if (
      version !== undefined &&
      version !== null &&
      (typeof version !== 'string' || version === '' || version.length > MAX_VERSION_LENGTH)
    ) {
      throw new GatewayError(
        40001,
        `Invalid request body: version must be a non-empty string of at most ${MAX_VERSION_LENGTH} characters`,
      )
    }
    await this.limits.take(p.accountId, 'objectWrites')
    const expectedVersion = typeof version === 'string' ? version : undefined
    const r = await this.store.update(p.appId, ns, id, patch, { expectedVersion, now: this.clock.now() })
    if (r.kind === 'conflict') {
      const now = r.currentVersion === undefined ? 'does not exist' : `is at version ${r.currentVersion}`
      throw new GatewayError(40900, `Version conflict: expected version ${expectedVersion} but object "${id}" ${now}`)
    }
    if (r.kind === 'too-large')
      throw new GatewayError(40009, `Object state too large (${r.size} bytes, limit is ${MAX_OBJECT_BYTES} bytes)`)
    const s = r.state
    await this.publish(p.appId, ns, {
      objectId: id,
      action: 'update',
      version: s.version,
      timestamp: s.timestamp,
      patch,
      data: s.data,
    })
    return s
  }

  async delete(p: Principal, namespace: string, objectId: string): Promise<DeleteResult> {
    const ns = checkNamespace(namespace)
    const id = checkObjectId(objectId)
    authorize(p, ns, WRITE)
    await this.limits.take(p.accountId, 'objectWrites')
    const change = await this.store.delete(p.appId, ns, id, this.clock.now())
    if (!change) throw missingObject(ns, id)
    await this.publish(p.appId, ns, change)
    return { objectId: id, deleted: true, version: change.version, timestamp: change.timestamp }
  }

  /** Changes of the object; up to `limit + 1` (the extra one means "more"). */
  async history(p: Principal, namespace: string, objectId: string, q: ObjectHistoryParams): Promise<ObjectChange[]> {
    const ns = await this.read(p, namespace)
    const id = checkObjectId(objectId)
    const after = q.cursor === undefined ? undefined : parseCursor(q.cursor)
    const page = await this.store.history(p.appId, ns, id, {
      start: q.start,
      end: q.end,
      direction: q.direction,
      after,
      limit: q.limit + 1,
    })
    if (page.length === 0 && !after && !(await this.known(p.appId, ns, id))) throw missingObject(ns, id)
    return page
  }

  /** Event-stream connections of this node subscribed to the object's channel. */
  async subscriptions(
    p: Principal,
    namespace: string,
    objectId: string,
  ): Promise<{ channel: string; subscriptions: Subscription[] }> {
    const ns = await this.read(p, namespace)
    const id = checkObjectId(objectId)
    if (!(await this.known(p.appId, ns, id))) throw missingObject(ns, id)
    const channel = objectChannel(ns, id)
    const subscriptions = this.hub
      .subscribers(p.appId, channel)
      .map((s) => ({ connectionId: s.connectionId, clientId: s.clientId ?? null }))
    return { channel, subscriptions }
  }

  private async known(appId: string, ns: string, id: string): Promise<boolean> {
    if (await this.store.get(appId, ns, id)) return true
    return (await this.store.history(appId, ns, id, { limit: 1, direction: 'backwards' })).length > 0
  }

  /**
   * The change is committed whatever happens here: a failed publish (backend unreachable) is
   * repaired by the next change of the object, which publishes every change after the channel's
   * newest event.
   */
  private async publish(appId: string, ns: string, change: ObjectChange) {
    try {
      await this.events.publish(appId, ns, change)
    } catch {
      /* see above */
    }
  }
}
