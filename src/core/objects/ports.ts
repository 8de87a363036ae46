/**
 * The LiveObjects storage port. Every backend (memory + SQLite, Redis) implements it; the shared
 * HTTP suites in test/objects hold both to the contracts stated here.
 */
import type { Direction, MessageDraft } from '../types'

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

// ---- The plugin's LiveObjects (channel objects changed by operations in the channel's log; live-*.ts) ----
// Everything in the JSON wire form of shared/reference/ably-liveobjects.md (bytes base64, JSON values as text).

/** A leaf or a reference: exactly one field is set (`bytes` base64, `json` JSON text of an object or array). */
export interface ObjectData {
  objectId?: string
  string?: string
  number?: number
  boolean?: boolean
  bytes?: string
  json?: string
}

/** A map entry: its value (absent when removed), the serial of the operation that wrote it, and removal. */
export interface MapEntry {
  data?: ObjectData
  timeserial?: string
  tombstone?: boolean
  /** When it was removed (ms), for a tombstoned entry. */
  serialTimestamp?: number
}

/** An operation as it is applied, stored and fanned out: creates carry the parsed initial value. */
export interface Operation {
  action: number
  objectId: string
  mapCreate?: { semantics: 0; entries: Record<string, MapEntry> }
  mapSet?: { key: string; value: ObjectData }
  mapRemove?: { key: string }
  counterCreate?: { count: number }
  counterInc?: { number: number }
  objectDelete?: Record<string, never>
  mapClear?: Record<string, never>
}

/** One object as stored. The object's type is its id's (`root` is a map). */
export interface LiveObjectRecord {
  objectId: string
  /** Serial of the last operation applied to it (its `siteTimeserials` entry). */
  serial?: string
  tombstone?: boolean
  /** When it was tombstoned (ms). */
  tombstonedAt?: number
  /** Its create was merged: a map's initial entries, or a counter's initial count. */
  created?: boolean
  createEntries?: Record<string, MapEntry>
  createCount?: number
  /** Entries written by operations (with their serials), tombstones included until collected. */
  entries?: Record<string, MapEntry>
  /** Sum of the increments (the create's count excluded). */
  count?: number
  /** Serial of the last MAP_CLEAR applied to the map (entries older than it are gone; its create's entries hidden). */
  clearTimeserial?: string
}

/**
 * An object as stored apart from its map entries (each entry is stored on its own, so a write
 * costs what it changes): a record without `entries` and `createEntries`, with the map's live
 * key count and the object's size by the hosted rule (live-size.ts).
 */
export interface LiveHead extends Omit<LiveObjectRecord, 'entries' | 'createEntries'> {
  /** Live entries of a map. */
  keys?: number
  /** The object's size: a counter 8, a map the sizes of its live entries. */
  bytes?: number
}

/**
 * A map entry as stored: `c` marks an entry of the map's create (no serial: sent in the sync's
 * `createOp`, not in `map.entries`), `z` is a live entry's size (its key and value, live-size.ts).
 */
export interface StoredEntry extends MapEntry {
  c?: true
  z?: number
}

/** What applying a batch changes (live-state.ts `applyOps`), for a store to write. */
export interface LiveChanges {
  heads: LiveHead[]
  /** Objects whose stored entries are all dropped first (MAP_CLEAR, OBJECT_DELETE). */
  cleared: string[]
  /** Entries written after that. */
  entries: Array<{ objectId: string; key: string; entry: StoredEntry }>
  /** New objects, root aside. */
  added: number
  /** Change of the channel's total object size. */
  bytes: number
}

export interface LiveLimits {
  /** Objects a channel may hold besides `root`. */
  maxObjects: number
  /** Live keys a map may hold. */
  maxKeys: number
  /** Removed keys are forgotten this long after their removal (ms). */
  gcGraceMs: number
  /** Total size of a channel's objects (live-size.ts; tombstones not counted). */
  maxChannelBytes: number
}

export interface LiveObjectBatch {
  /** The operations of one publish (one ProtocolMessage or REST request), applied all or none. */
  ops: Operation[]
  /** One channel log entry (kind `object`) per operation, in the same order. */
  drafts: MessageDraft[]
}

/** How a batch is appended (the broker's PublishOptions that apply to it) and bounded. */
export interface LivePublishOptions {
  /** The channel is of a `persisted` namespace (its log entries are kept for the long retention). */
  persisted: boolean
  /** The entries' ids are de-duplicated within the idempotency window (REST idempotent publishes). */
  clientIds?: boolean
  /** The entries' ids may be looked up later (a realtime connection's resends). */
  findable?: boolean
  limits: LiveLimits
}

export interface LiveObjectStore {
  /**
   * In one atomic step per channel (across every node sharing the store): checks the operations
   * against the stored objects (`limits`: 92001; a tombstoned object: 92002), appends the drafts
   * to the channel's log in the channel's one serial sequence (delivered like any entry) and
   * applies each operation with its entry's serial and time (live-state.ts `applyOps`). Resolves
   * with the serials once the change is durable; on a refusal nothing is appended or applied.
   * With `clientIds`, a batch whose entry ids were all published within the idempotency window is
   * answered with the first serials and applied once.
   */
  publish(appId: string, channel: string, batch: LiveObjectBatch, opts: LivePublishOptions): Promise<string[]>
  /**
   * Every object of the channel, `root` first (an empty root when none is stored), as of one
   * point of the channel's sequence: each record covers exactly the operations up to it.
   */
  snapshot(appId: string, channel: string): Promise<LiveObjectRecord[]>
  /** Forgets these objects (tombstoned ones past the grace period); each in one step. */
  remove(appId: string, channel: string, objectIds: string[]): Promise<void>
  /**
   * Forgets removed map keys (tombstoned entries past the grace period): each only while it is
   * still the tombstone of that serial (a later write to the key keeps it).
   */
  removeEntries(
    appId: string,
    channel: string,
    entries: Array<{ objectId: string; key: string; timeserial: string }>,
  ): Promise<void>
}
