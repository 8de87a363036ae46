import { connect, type ChannelModel, type GetMessage, type Options } from 'amqplib'
import type { BrokerQueue } from '../../core/ports'
import type { AppLane } from './app-lane'
import { closeQuietly } from './connection'
import type { RabbitManagement } from './management'
import { consumerPermissions, consumerUser } from './naming'

/** Messages moved per round (published, confirmed, then acknowledged at the source together). */
const BATCH = 500
/** Rounds of moving and deleting a queue that keeps receiving (a node of the earlier version still running). */
const ROUNDS = 3

export interface LegacyDeps {
  mgmt: RabbitManagement
  /** AMQP_URL: it opens the shared vhost where earlier versions kept the queues. */
  baseUrl: string
  baseVhost: string
  /** This deployment's queues of an app (undefined: not this deployment's app, left alone). */
  appQueues(appId: string): Promise<BrokerQueue[] | undefined>
  /** Makes the app's consumer user, vhost and permissions of the current layout. */
  provision(appId: string): Promise<void>
  onLane<T>(appId: string, f: (lane: AppLane) => Promise<T>): Promise<T>
  onError(e: unknown): void
}

/**
 * Moves what earlier versions left in the shared vhost (AMQP_URL's), where every app's consumer
 * user could passively declare any app's queue and read its counts, into the apps' own vhosts.
 * Only this deployment's apps are touched (the store knows them): a consumer user `app.<id>`
 * with the earlier permissions there (read `^<id>:`, nothing else) is deleted, which closes its
 * connections (its unacknowledged messages go back to their queue) and its permission there; the
 * app is provisioned anew (same user and password, its own vhost); each of its queues
 * `<id>:<name>` there is declared in the app's vhost, its messages moved (published with their
 * properties, confirmed, then acknowledged at the source: at least once), and it is deleted once
 * empty. Nothing to do costs two management calls (the shared vhost's permissions and queues).
 * Returns what it moved.
 */
export async function moveLegacyQueues(d: LegacyDeps): Promise<{ apps: number; queues: number; messages: number }> {
  const moved = { apps: 0, queues: 0, messages: 0 }
  const users = new Set<string>()
  for (const p of await d.mgmt.vhostPermissions(d.baseVhost)) {
    const id = p.user.slice(4)
    if (p.user !== consumerUser(id)) continue
    const earlier = consumerPermissions(id)
    if (p.configure === earlier.configure && p.write === earlier.write && p.read === earlier.read) users.add(id)
  }
  const queuesOf = new Map<string, Set<string>>()
  for (const name of await d.mgmt.queueNames(d.baseVhost)) {
    const i = name.lastIndexOf(':')
    if (i <= 0) continue
    const id = name.slice(0, i)
    if (!queuesOf.has(id)) queuesOf.set(id, new Set())
    queuesOf.get(id)!.add(name)
  }
  const apps = new Set([...users, ...queuesOf.keys()])
  if (!apps.size) return moved
  let base: ChannelModel | undefined
  try {
    for (const appId of apps) {
      const queues = await d.appQueues(appId)
      if (!queues) continue
      moved.apps++
      // its connections to the shared vhost close with it; the user is made again below
      if (users.has(appId)) await d.mgmt.deleteUser(consumerUser(appId))
      if (queues.length) await d.provision(appId)
      const left = queuesOf.get(appId)
      for (const q of queues) {
        if (!left?.has(q.name)) continue
        base ??= await openBase(d.baseUrl)
        const conn = base
        moved.messages += await d.onLane(appId, async (lane) => {
          await lane.declareQueue(q)
          return moveQueue(conn, lane, q.name)
        })
        moved.queues++
      }
    }
  } finally {
    if (base) await closeQuietly(base)
  }
  return moved
}

async function openBase(url: string): Promise<ChannelModel> {
  const c = await connect(url, { timeout: 5000 })
  c.on('error', () => {})
  return c
}

/** Moves the queue's messages from the shared vhost into the app's, then deletes it there once empty. */
async function moveQueue(base: ChannelModel, lane: AppLane, name: string): Promise<number> {
  let n = 0
  for (let round = 0; round < ROUNDS; round++) {
    const src = await base.createChannel()
    src.on('error', () => {})
    try {
      const dst = await (await lane.conn.connected(5000)).createConfirmChannel()
      dst.on('error', () => {})
      try {
        for (;;) {
          const batch: GetMessage[] = []
          while (batch.length < BATCH) {
            const m = await src.get(name, { noAck: false })
            if (!m) break
            batch.push(m)
          }
          if (!batch.length) break
          for (const m of batch) dst.sendToQueue(name, m.content, publishOptions(m))
          await dst.waitForConfirms()
          src.ack(batch[batch.length - 1]!, true)
          n += batch.length
        }
      } finally {
        await closeQuietly(dst)
      }
      await src.deleteQueue(name, { ifEmpty: true })
      return n
    } catch (e) {
      // not empty: a message arrived meanwhile (a node of the earlier version): move it too
      if ((e as { code?: unknown })?.code !== 406 || round === ROUNDS - 1) throw e
    } finally {
      await closeQuietly(src)
    }
  }
  return n
}

/** The message's own properties, as it was first published (its expiration, if any, starts again). */
function publishOptions(m: GetMessage): Options.Publish {
  const p = m.properties
  const o: Options.Publish = { persistent: p.deliveryMode === 2 }
  if (p.contentType !== undefined) o.contentType = p.contentType
  if (p.contentEncoding !== undefined) o.contentEncoding = p.contentEncoding
  if (p.headers !== undefined) o.headers = p.headers
  if (p.priority !== undefined) o.priority = p.priority
  if (p.correlationId !== undefined) o.correlationId = p.correlationId
  if (p.replyTo !== undefined) o.replyTo = p.replyTo
  if (p.expiration !== undefined) o.expiration = p.expiration
  if (p.messageId !== undefined) o.messageId = p.messageId
  if (p.timestamp !== undefined) o.timestamp = p.timestamp
  if (p.type !== undefined) o.type = p.type
  if (p.appId !== undefined) o.appId = p.appId
  return o
}
