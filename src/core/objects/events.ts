import type { Namespaces } from '../control/namespaces'
import type { Broker, PublishOptions } from '../ports'
import type { Message, MessageDraft } from '../types'
import { objectChannel } from './names'
import type { ChangePosition, ObjectChange, ObjectHistoryQuery, ObjectStore } from './ports'

/** Message ids of change events: `objects:<timestamp>-<version>` (a version never repeats for an object). */
const ID_PREFIX = 'objects:'
/** Changes published per broker call. */
const CHUNK = 100
/** Newest channel messages inspected to find the newest change event (others may publish there too). */
const LOOKBACK = 20
/** With no change event on the channel, changes this recent may still be unpublished. */
const RECENT_MS = 10_000
const MAX_ROUNDS = 20

/**
 * The payload of a change event, published as JSON (`encoding: json`) under the message name
 * `update` or `delete` on the object's channel.
 */
export interface ObjectEvent extends ObjectChange {
  namespace: string
}

export function eventDraft(namespace: string, c: ObjectChange): MessageDraft {
  const event: ObjectEvent = { namespace, ...c }
  return {
    id: `${ID_PREFIX}${c.timestamp}-${c.version}`,
    name: c.action,
    data: JSON.stringify(event),
    encoding: 'json',
  }
}

/** Versions are decimal integers increasing per object (see ports.ts). */
function isBefore(a: ChangePosition, b: ChangePosition): boolean {
  try {
    return BigInt(a.version) < BigInt(b.version)
  } catch {
    return true
  }
}

function positionOf(m: Message): ChangePosition | undefined {
  const match = m.id.startsWith(ID_PREFIX) ? /^(\d+)-(\d+)$/.exec(m.id.slice(ID_PREFIX.length)) : null
  return match ? { timestamp: Number(match[1]), version: match[2]! } : undefined
}

/**
 * Publishes change events so that every subscriber sees an object's changes in version order,
 * even when many nodes change the object concurrently. After its own change, a writer publishes
 * every retained change after the newest change event on the channel, up to and including its
 * own, as one broker publish with the change versions as message ids. The broker appends a batch
 * atomically and skips ids it has already seen (idempotency window), so whichever writer gets
 * there first publishes the changes in order and the others' batches are duplicates; the channel
 * always holds a gap-free, ordered run of changes. A change whose publish failed is published by
 * the next change of the object.
 */
export class ObjectEvents {
  /** Per object, the tail of this node's catch-ups: one runs at a time, so a burst costs O(n). */
  private readonly running = new Map<string, Promise<void>>()

  constructor(
    private readonly store: ObjectStore,
    private readonly broker: Broker,
    private readonly namespaces: Namespaces,
  ) {}

  /** Resolves once `change` is on the channel (published by this call or by an earlier writer). */
  publish(appId: string, namespace: string, change: ObjectChange): Promise<void> {
    const channel = objectChannel(namespace, change.objectId)
    const key = `${appId}\u0000${channel}`
    const run = (this.running.get(key) ?? Promise.resolve()).then(() => this.catchUp(appId, namespace, channel, change))
    const tail = run.catch(() => {})
    this.running.set(key, tail)
    void tail.then(() => {
      if (this.running.get(key) === tail) this.running.delete(key)
    })
    return run
  }

  private async catchUp(appId: string, namespace: string, channel: string, change: ObjectChange): Promise<void> {
    const opts: PublishOptions = { persisted: await this.namespaces.isPersisted(appId, channel), clientIds: true }
    const own: ChangePosition = { timestamp: change.timestamp, version: change.version }
    let after = await this.newestPublished(appId, channel, opts)
    for (let round = 0; round < MAX_ROUNDS; round++) {
      // someone else already published our change (with theirs)
      if (after && !isBefore(after, own)) return
      const q: ObjectHistoryQuery = after
        ? { after, until: own, limit: CHUNK, direction: 'forwards' }
        : { start: change.timestamp - RECENT_MS, until: own, limit: CHUNK, direction: 'forwards' }
      const batch = await this.store.history(appId, namespace, change.objectId, q)
      // our change is no longer retained (retention shorter than a round trip): publish it alone
      if (batch.length === 0 && !after) batch.push(change)
      if (batch.length === 0) return
      await this.broker.publish(
        appId,
        channel,
        batch.map((c) => eventDraft(namespace, c)),
        opts,
      )
      const last = batch[batch.length - 1]!
      if (last.version === change.version || batch.length < CHUNK) return
      after = { timestamp: last.timestamp, version: last.version }
    }
  }

  private async newestPublished(
    appId: string,
    channel: string,
    opts: PublishOptions,
  ): Promise<ChangePosition | undefined> {
    const recent = await this.broker.history(appId, channel, { limit: LOOKBACK, direction: 'backwards' }, opts)
    for (const m of recent) {
      const p = positionOf(m)
      if (p) return p
    }
    return undefined
  }
}
