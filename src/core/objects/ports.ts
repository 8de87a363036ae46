/**
 * The LiveObjects storage port. Every backend (memory + SQLite, Redis) implements it; the shared
 * HTTP suites in test/objects hold both to the contracts stated here.
 */
import type { Direction } from '../types'

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject
export interface JsonObject {
  [key: string]: JsonValue
}

/**
 * The current state of an object. `version` is opaque to clients; both stores issue decimal
 * integers that never repeat for an object. `timestamp` is ms since epoch.
 */
export interface ObjectState {
  objectId: string
  data: JsonObject
  version: string
  timestamp: number
}

export type ChangeAction = 'update' | 'delete'

/**
 * One retained state change. For `update`: `patch` as sent and `data`, the state after it; for
 * `delete`: neither. Changes of one object have strictly increasing versions (in the store's
 * order) and non-decreasing timestamps.
 */
export interface ObjectChange {
  objectId: string
  action: ChangeAction
  version: string
  timestamp: number
  patch?: JsonObject
  data?: JsonObject
}

/** Where a change sits in its object's history (what a history cursor carries). */
export interface ChangePosition {
  timestamp: number
  version: string
}

export interface NamespaceSummary {
  namespaceId: string
  objectCount: number
  lastActivity: number
}

export interface ObjectHistoryQuery {
  /** Inclusive bounds on the change timestamp (ms). */
  start?: number
  end?: number
  limit: number
  direction: Direction
  /** Only changes strictly after (forwards) or before (backwards) this one. */
  after?: ChangePosition
  /** Forwards only: no change after this one (inclusive bound). */
  until?: ChangePosition
}

export type UpdateOutcome =
  | { kind: 'updated'; state: ObjectState; created: boolean }
  /** `expectedVersion` was given and is not the current version (or the object does not exist). */
  | { kind: 'conflict'; currentVersion?: string }
  /** The merged state would exceed the store's bound; nothing was changed. */
  | { kind: 'too-large'; size: number }

export interface UpdateOptions {
  /** Apply only if this is the object's current version. */
  expectedVersion?: string
  /** The caller's clock; the stored timestamp is never below the object's previous one. */
  now: number
}

/** Durable object state per app and namespace, with a bounded history of changes. */
export interface ObjectStore {
  get(appId: string, namespace: string, objectId: string): Promise<ObjectState | undefined>
  /** Objects whose id starts with `prefix`, sorted by id (byte order), strictly after `after`, at most `limit`. */
  list(appId: string, namespace: string, q: { prefix: string; after?: string; limit: number }): Promise<ObjectState[]>
  /** Namespaces holding at least one object, sorted by id, strictly after `after`, at most `limit`. */
  namespaces(appId: string, q: { after?: string; limit: number }): Promise<NamespaceSummary[]>
  /** A namespace exists while it holds at least one object. */
  namespace(appId: string, namespace: string): Promise<NamespaceSummary | undefined>
  /**
   * In one atomic step (across every node sharing the store): checks `expectedVersion`, merges
   * `patch` into the current state (or `{}`) by `mergePatch` (RFC 7396), writes the state under a
   * new version never used before for this object, appends the change to the history and updates
   * the namespace summary. Concurrent updates are serialized; none is lost.
   */
  update(
    appId: string,
    namespace: string,
    objectId: string,
    patch: JsonObject,
    opts: UpdateOptions,
  ): Promise<UpdateOutcome>
  /** Atomically removes the object and records the deletion; undefined when there is no object. */
  delete(appId: string, namespace: string, objectId: string, now: number): Promise<ObjectChange | undefined>
  /** Retained changes of the object in the query's order, honouring start/end, `after` and limit. */
  history(appId: string, namespace: string, objectId: string, q: ObjectHistoryQuery): Promise<ObjectChange[]>
  close(): Promise<void>
}

/** At most this many changes are retained per object (and none older than the retention window). */
export const OBJECT_HISTORY_MAX = 1000
/** Bound on an object's state, as the byte length of its JSON text. */
export const MAX_OBJECT_BYTES = 65_536
