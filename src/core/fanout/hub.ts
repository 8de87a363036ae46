import type { Broker } from '../ports'
import type { Message } from '../types'

/** A local consumer of channel messages (an event-stream connection). */
export interface Subscriber {
  connectionId: string
  clientId?: string
  deliver(channel: string, messages: Message[]): void
}

interface ChannelSubs {
  subs: Set<Subscriber>
  unsubscribe: () => void
}

/**
 * Local subscriptions of this node. The hub subscribes to the broker for a channel while it has
 * at least one local subscriber, and hands what the broker delivers to each of them; it never
 * receives publishes directly.
 */
export class Hub {
  private channels = new Map<string, ChannelSubs>()

  constructor(private readonly broker: Broker) {}

  private static key(appId: string, channel: string) { return appId + '\u0000' + channel }

  add(appId: string, channel: string, sub: Subscriber): void {
    const k = Hub.key(appId, channel)
    let c = this.channels.get(k)
    if (!c) {
      const subs = new Set<Subscriber>()
      const unsubscribe = this.broker.subscribe(appId, channel, (_a, ch, msgs) => {
        for (const s of subs) s.deliver(ch, msgs)
      })
      c = { subs, unsubscribe }
      this.channels.set(k, c)
    }
    c.subs.add(sub)
  }

  remove(appId: string, channel: string, sub: Subscriber): void {
    const k = Hub.key(appId, channel)
    const c = this.channels.get(k)
    if (!c) return
    c.subs.delete(sub)
    if (c.subs.size === 0) {
      c.unsubscribe()
      this.channels.delete(k)
    }
  }

  subscribers(appId: string, channel: string): Subscriber[] {
    return [...(this.channels.get(Hub.key(appId, channel))?.subs ?? [])]
  }

  /** Live subscribers of a channel on this node. */
  count(appId: string, channel: string): number {
    return this.channels.get(Hub.key(appId, channel))?.subs.size ?? 0
  }
}
