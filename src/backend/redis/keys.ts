/**
 * Every Redis key and pub/sub channel name of the gateway, in one place. All carry the prefix
 * (REDIS_PREFIX) and, where they hold app data, the app id, so apps never see each other's data.
 * App ids never contain `:`, so `<app>:<channel>` is unambiguous.
 *
 * Cluster-shaped: every key carries a hash tag (`{...}`: Redis Cluster hashes only what is
 * between the first `{` and the next `}`), so that each Lua script touches one slot:
 * - every key of one channel (stream, idempotency markers, notification channel and the nodes
 *   subscribed to it, presence, occupancy, message versions) is tagged `{<app>:<channel>}`. A
 *   channel name may hold `}`: the tag then ends at its first `}`, the same place in every key of
 *   that channel (they all start `{<app>:<channel>` after the prefix and kind), so they still
 *   share a slot;
 * - per-app state (channel index, LiveObjects, push, chat rooms) is tagged `{<app>}`;
 * - control state (control hashes, epoch, data-lost mark, secret, revocation index) is in `{ctl}`;
 * - presence bookkeeping by connection (member lists, holders, a node's connections) is in one
 *   of PRESENCE_BUCKETS buckets `{pc<b>}`, by a hash of the connection id, so that each claim,
 *   take and reap step of a connection touches its bucket's slot only and connections spread over
 *   the shards; node leases (one sorted set, renewed per node on a timer) are in `{pl}`; the
 *   earlier version's presence bookkeeping, still reaped during an upgrade, is in `{pc}`;
 * - nonces and their index share `{<scope>}`; a queue's keys `{q:<queue>}`; marks and stats are
 *   touched one key per command, so they need no common tag.
 * The prefix holds no `{` or `}` (config refuses it), so the first `{` is always ours.
 * On one redis-server the tags change nothing but the key names.
 */
/**
 * How many buckets the presence bookkeeping by connection is spread over. Each realtime connect
 * and resume writes its connection's bucket, so the buckets must spread over every master of a
 * cluster (64 slots hashed at random: about 21 per master of 3, and still several per master of
 * 16); a dead node is reaped bucket by bucket, so they must stay few (64 single-slot steps per
 * dead node at least). Changing it moves connections to other buckets: a layout change.
 */
export const PRESENCE_BUCKETS = 64

/** The bucket of a connection's presence bookkeeping: FNV-1a of its id (stable across nodes and restarts). */
export function presenceBucket(connectionId: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < connectionId.length; i++) h = Math.imul(h ^ connectionId.charCodeAt(i), 0x01000193)
  return (h >>> 0) % PRESENCE_BUCKETS
}

/** What a channel's notification channel name is followed by in the key of its subscribed nodes (`RedisKeys.nodes`). */
export const NODES_SUFFIX = ':nodes'

export class RedisKeys {
  constructor(readonly prefix: string) {}

  /** The hash tag of one channel's keys. */
  private ch = (app: string, channel: string) => `{${app}:${channel}}`

  /** Stream of a channel's messages; the entry id is the channel serial. */
  stream = (app: string, channel: string) => `${this.prefix}s:${this.ch(app, channel)}`
  /**
   * The id of the last entry appended to a channel's stream (written by every script that appends
   * to it, with the stream's expiry): the publish script's notification gives it as the previous id
   * without reading the stream.
   */
  lastId = (app: string, channel: string) => `${this.prefix}l:${this.ch(app, channel)}`
  /** Prefix of idempotency markers `<id> -> serial` of a channel (one key per client id, with TTL). */
  idemPrefix = (app: string, channel: string) => `${this.prefix}i:${this.ch(app, channel)}:`
  /** Sorted set of an app's channels, scored by last publish time (enumeration). */
  channels = (app: string) => `${this.prefix}c:{${app}}`
  /** Pub/sub channel notifying nodes of new messages of a channel. */
  notify = (app: string, channel: string) => `${this.prefix}n:${this.ch(app, channel)}`
  /**
   * Sorted set of the ids of the nodes subscribed to a channel's notifications, each scored with
   * the time (ms) until which it counts (`notify` and NODES_SUFFIX: the publish script names it
   * from the notification channel): a node's own publishes are not notified when it is the only
   * subscriber (subscriptions.ts `Membership`).
   */
  nodes = (app: string, channel: string) => `${this.notify(app, channel)}${NODES_SUFFIX}`
  /** Hash of control records of one kind: id -> JSON. */
  control = (kind: string) => `${this.prefix}ctl:{ctl}:${kind}`
  /** String naming this generation of the data (written by bootstrap); gone means Redis lost its data. */
  epoch = () => `${this.prefix}epoch:{ctl}`
  /** Set by a node that found the epoch gone: later nodes refuse to bootstrap over lost data. */
  dataLost = () => `${this.prefix}epoch:{ctl}:lost`
  /** The servers' shared secret (ControlStore.secret). */
  secret = () => `${this.prefix}secret:{ctl}`
  /** Pub/sub channel of control changes (`kind id`). */
  controlEvents = () => `${this.prefix}ctl:events`
  /** Hash of a channel's event-stream subscribers per node: node id -> `<count>:<reported at ms>`. */
  occupancy = (app: string, channel: string) => `${this.prefix}occ:${this.ch(app, channel)}`
  /** Hash of a channel's present members (`<connectionId>\0<clientId>` -> member); list of its presence history. */
  presence = (app: string, channel: string) => `${this.presencePrefix()}${this.ch(app, channel)}`
  /** What `presence` puts before `<app>:<channel>` (the presence scripts build member keys from it). */
  presencePrefix = () => `${this.prefix}p:`
  /**
   * Presence by connection, in the connection's bucket (presenceBucket): the set of
   * `<app>\0<channel>\0<clientId>` members entered over a connection, the node holding it, and
   * per node the connections of the bucket it holds. The scripts append a connection or node id to
   * a bucket's prefixes.
   */
  presenceConnection = (connectionId: string) =>
    this.presenceConnectionPrefix(presenceBucket(connectionId)) + connectionId
  presenceHolder = (connectionId: string) => this.presenceHolderPrefix(presenceBucket(connectionId)) + connectionId
  presenceNodeConnections = (node: string, bucket: number) => `${this.prefix}pnc:{pc${bucket}}:${node}`
  presenceConnectionPrefix = (bucket: number) => `${this.prefix}pcm:{pc${bucket}}:`
  presenceHolderPrefix = (bucket: number) => `${this.prefix}pch:{pc${bucket}}:`
  /**
   * Sorted set of nodes by lease expiry (ms, Redis time): the connections of a node that stops
   * renewing its lease are reaped by the others. (Not `pnodes:{pc}`, the earlier layout's: a node
   * of an earlier version would reap a dead node of this one in its own layout, find nothing and
   * forget the node before this version's reaper found it.)
   */
  presenceNodes = () => `${this.prefix}pleases:{pl}`
  presenceHistory = (app: string, channel: string) => `${this.prefix}ph:${this.ch(app, channel)}`
  /** Hash of stats counters of one interval; sorted set indexing a scope's intervals. */
  stats = (scope: string, unit: string, start: number) => `${this.prefix}st:${scope}:${unit}:${start}`
  statsIndex = (scope: string, unit: string) => `${this.prefix}sx:${scope}:${unit}`
  /**
   * A token-request nonce, and the sorted set of its scope's (account's) live nonces scored by
   * expiry (ms, Redis time) that bounds them; the scope is the hash tag, so both share a slot.
   */
  nonce = (scope: string, key: string) => `${this.prefix}nonce:{${scope}}:${key}`
  nonceIndex = (scope: string) => `${this.prefix}nonces:{${scope}}`
  /** Sorted set of an account's active channels: `<app>:<channel>` -> when a node last named it (ms). */
  activeChannels = (accountId: string) => `${this.prefix}achan:{acct:${accountId}}`
  /** A mark about a realtime connection (MarkStore); the sorted set of a scope's marks by expiry (ms). */
  mark = (key: string) => `${this.prefix}mark:${key}`
  markIndex = (scope: string) => `${this.prefix}marks:${scope}`
  /**
   * Hash of the token revocations of one key (field: JSON `[target, issuedBefore, appliesAt]`,
   * value: when it expires), expiring with the last of them; the SCAN pattern matching them all;
   * and the pub/sub channel announcing new revocations to every node.
   */
  revocations = (keyName: string) => `${this.prefix}rv:{ctl}:${keyName}`
  /** Set of the key names that have revocations (a cluster cannot SCAN for them: they are indexed). */
  revocationIndex = () => `${this.prefix}rvx:{ctl}`
  revocationEvents = () => `${this.prefix}rvev`
  /**
   * LiveObjects: hash of an object's state (`d` state tree, `v` version, `t` timestamp) and stream
   * of its changes (entry id `<timestamp>-<version>`). A namespace may hold `:`, so it is
   * length-prefixed where an object id follows it.
   */
  objectState = (app: string, ns: string, id: string) => `${this.prefix}o:{${app}}:${ns.length}:${ns}:${id}`
  objectHistory = (app: string, ns: string, id: string) => `${this.prefix}oh:{${app}}:${ns.length}:${ns}:${id}`
  /** Sorted set (all scores 0, so ordered by id) of a namespace's object ids. */
  objectIds = (app: string, ns: string) => `${this.prefix}oi:{${app}}:${ns}`
  /**
   * The plugin's LiveObjects of a channel: hash of object id -> msgpack head (channel's slot); an
   * earlier version kept each object's entries inside it (lua/live-objects.ts migrates them).
   */
  liveObjects = (app: string, channel: string) => `${this.prefix}lo:${this.ch(app, channel)}`
  /** Prefix of the entries hash of each map of a channel (`<prefix><objectId>`: key -> msgpack entry). */
  liveEntriesPrefix = (app: string, channel: string) => `${this.prefix}loe:${this.ch(app, channel)}:`
  /** A channel's LiveObjects totals: hash, `b` the total object size. */
  liveTotals = (app: string, channel: string) => `${this.prefix}lot:${this.ch(app, channel)}`
  /** Hashes of an app's namespaces: namespace -> object count; namespace -> last activity (ms). */
  objectCounts = (app: string) => `${this.prefix}oc:{${app}}`
  objectActivity = (app: string) => `${this.prefix}oa:{${app}}`
  /** Counter issuing the object versions of an app. */
  objectVersions = (app: string) => `${this.prefix}ov:{${app}}`
  /**
   * An app queue: sorted set of delivery tags by visible-at time, hash of the items, the tag
   * sequence, and hash of how often each item was handed out.
   */
  queueVisible = (queueId: string) => `${this.prefix}qv:{q:${queueId}}`
  queueItems = (queueId: string) => `${this.prefix}qi:{q:${queueId}}`
  queueSeq = (queueId: string) => `${this.prefix}qs:{q:${queueId}}`
  queueDeliveries = (queueId: string) => `${this.prefix}qd:{q:${queueId}}`
  /** Token bucket of a rate limit (`<account>:<class>`). */
  bucket = (key: string) => `${this.prefix}rl:${key}`
  /**
   * Hash of one chat message's state: `n` version number, `v` latest version, and one field per
   * reaction record (core/chat/ports reactionField). A serial holds no `:`, so it ends the key.
   */
  chatMessage = (app: string, room: string, serial: string) => `${this.prefix}cm:${this.ch(app, room)}:${serial}`
  /** Annotation summary state of one message (core/channels/annotations.ts), and its list of annotations. */
  annotationState = (app: string, channel: string, serial: string) =>
    `${this.prefix}as:${this.ch(app, channel)}:${serial}`
  annotationLog = (app: string, channel: string, serial: string) =>
    `${this.prefix}al:${this.ch(app, channel)}:${serial}`
  /** Hash of a channel's newest live-only serials (`a` annotation, `s` summary: AnnotationStore.mark). */
  liveOnlyMarks = (app: string, channel: string) => `${this.prefix}lm:${this.ch(app, channel)}`
  /**
   * Versions of one mutable message: hash of `l` its latest version, `u` the newest version serial
   * and one field per version (serial -> body); sorted set (scores 0, so ordered by serial) of the
   * version serials. A serial holds no `:`, so it ends the key.
   */
  versions = (app: string, channel: string, serial: string) => `${this.prefix}mv:${this.ch(app, channel)}:${serial}`
  versionIndex = (app: string, channel: string, serial: string) =>
    `${this.prefix}mvi:${this.ch(app, channel)}:${serial}`
  /** Sorted set of an app's chat rooms scored by last activity (ms). */
  chatRooms = (app: string) => `${this.prefix}cr:{${app}}`
  /** Sorted set of a chat room's typers scored by expiry (ms). */
  chatTyping = (app: string, room: string) => `${this.prefix}ct:${this.ch(app, room)}`
  /**
   * Push: hash of a device registration (`d` the record as JSON, `c` clientId, `s` state,
   * `f` consecutive failures, `e` last error as JSON); a device id may hold `:`, so it ends the key.
   */
  pushDevice = (app: string, id: string) => `${this.prefix}pd:{${app}}:${id}`
  /** Sorted sets (all scores 0, so ordered by id) of an app's device ids and of one client's. */
  pushDevices = (app: string) => `${this.prefix}pdi:{${app}}`
  pushClientDevicesPrefix = (app: string) => `${this.prefix}pdc:{${app}}:`
  /** Sorted set (scores 0) of an app's subscriptions as `<channel>\0<c|d>\0<clientId|deviceId>` (no part holds NUL). */
  pushSubscriptions = (app: string) => `${this.prefix}ps:{${app}}`
  /** Prefix of the sets of channels one subscriber is subscribed to: `<prefix><c|d>:<id>`. */
  pushTargetPrefix = (app: string) => `${this.prefix}pt:{${app}}:`
}
