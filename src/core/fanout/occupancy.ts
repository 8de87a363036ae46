import type { OccupancyCounts, OccupancyStore } from '../ports'

/** An event stream's role on each of its channels: it receives messages and presence (never objects). */
export const STREAM_ROLE: OccupancyRole = Object.freeze({ subscribe: true, presenceSubscribe: true })

/** What one attachment does on its channel. */
export interface OccupancyRole {
  publish?: boolean
  subscribe?: boolean
  presenceSubscribe?: boolean
  /** Granted OBJECT_PUBLISH (which needs the object-publish capability). */
  objectPublish?: boolean
  /** Granted OBJECT_SUBSCRIBE (which needs the object-subscribe capability). */
  objectSubscribe?: boolean
}

interface Local extends OccupancyCounts {
  appId: string
  channel: string
}

/** Counts of a channel nobody is attached to (on this node, or a node that reported none). */
export const zeroCounts = (): OccupancyCounts => ({
  connections: 0,
  publishers: 0,
  subscribers: 0,
  presenceSubscribers: 0,
  objectPublishers: 0,
  objectSubscribers: 0,
})

/** The counts alone (without the channel's names). */
const countsOf = (c: OccupancyCounts): OccupancyCounts => ({
  connections: c.connections,
  publishers: c.publishers,
  subscribers: c.subscribers,
  presenceSubscribers: c.presenceSubscribers,
  objectPublishers: c.objectPublishers,
  objectSubscribers: c.objectSubscribers,
})

/**
 * Who is attached to each channel on this node, by role: every transport counts its attachments
 * here (an event stream subscribes to messages and presence; a realtime attachment by its granted
 * modes). A cluster node reports its counts to the shared store, which adds up every live node.
 */
export class Occupancy {
  private readonly channels = new Map<string, Local>()
  private listener?: (appId: string, channel: string) => void

  /** `store`: where a cluster node reports its counts (absent on a single node). */
  constructor(private readonly store?: OccupancyStore) {}

  /** Told of every change of this node's counts (occupancy events). */
  listen(fn: (appId: string, channel: string) => void): void {
    this.listener = fn
  }

  /** Counts one attachment (in `role`) of the channel, until `detach` with the same role. */
  attach(appId: string, channel: string, role: OccupancyRole): void {
    this.change(appId, channel, role, 1)
  }

  detach(appId: string, channel: string, role: OccupancyRole): void {
    this.change(appId, channel, role, -1)
  }

  private change(appId: string, channel: string, role: OccupancyRole, by: 1 | -1) {
    const k = appId + '\u0000' + channel
    let c = this.channels.get(k)
    if (!c) this.channels.set(k, (c = { appId, channel, ...zeroCounts() }))
    c.connections += by
    if (role.publish) c.publishers += by
    if (role.subscribe) c.subscribers += by
    if (role.presenceSubscribe) c.presenceSubscribers += by
    if (role.objectPublish) c.objectPublishers += by
    if (role.objectSubscribe) c.objectSubscribers += by
    const counts = countsOf(c)
    if (c.connections === 0) this.channels.delete(k)
    this.store?.report(appId, channel, counts)
    this.listener?.(appId, channel)
  }

  /** This node's counts of a channel. */
  local(appId: string, channel: string): OccupancyCounts {
    const c = this.channels.get(appId + '\u0000' + channel)
    return c ? countsOf(c) : zeroCounts()
  }

  /** The channel's counts on every node (channel details, chat occupancy). */
  cluster(appId: string, channel: string): Promise<OccupancyCounts> {
    return this.store ? this.store.count(appId, channel) : Promise.resolve(this.local(appId, channel))
  }
}
