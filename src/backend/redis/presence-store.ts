import type { HistoryRetention, OrphanMember, PresenceStore } from '../../core/ports'
import { PresenceAction, type HistoryQuery, type PresenceMessage } from '../../core/types'
import { presenceHistoryPage, PRESENCE_HISTORY_MAX } from '../shared/presence-history'
import { BUFFERS, type RedisCommander } from './clients'
import { withTimeout } from './errors'
import { pack, unpack } from './codec'
import { PRESENCE_BUCKETS, presenceBucket, type RedisKeys } from './keys'
import {
  APPLY_PRESENCE_SCRIPT,
  CLAIM_SCRIPT,
  DEAD_NODE_SCRIPT,
  FORGET_NODE_SCRIPT,
  LEASE_SCRIPT,
  LIVE_NODE_SCRIPT,
  REAP_BUCKET_SCRIPT,
  TAKE_BEGIN_SCRIPT,
  TAKE_END_SCRIPT,
  TAKE_MEMBERS_SCRIPT,
} from './lua/presence'
import { ScriptRunner } from './script-runner'

/** Connections reaped per script call (a dead node's are taken in steps, so Redis is never held long). */
const REAP_STEP = 100
/** Script calls of one reap at most (the next reap goes on where it stopped). */
const REAP_CALLS = 1000

export interface RedisPresenceSettings {
  redisTimeoutMs: number
  /** A node that has not renewed its lease for this long is dead: its members leave (ms). */
  presenceLeaseMs: number
  /** Presence history is kept as long as message history: HISTORY_TTL_MS, or PERSISTED_HISTORY_TTL_MS. */
  historyTtlMs: number
  persistedHistoryTtlMs: number
}

/**
 * Where presence bookkeeping lies: a set of node leases, and the PRESENCE_BUCKETS buckets (slots)
 * of the member lists, holders and node sets of the connections of those nodes.
 */
interface PresenceLayout {
  leases: string
  buckets: number
  nodeConnections(node: string, bucket: number): string
  connectionPrefix(bucket: number): string
  holderPrefix(bucket: number): string
}

/** A member list entry `<app>\0<channel>\0<clientId>`, split. */
function splitEntry(e: string): [string, string, string] {
  const a = e.indexOf('\0')
  const b = e.indexOf('\0', a + 1)
  return [e.slice(0, a), e.slice(a + 1, b), e.slice(b + 1)]
}

/**
 * Presence sets (hash member -> message), presence history (a list kept as long as the channel's
 * stream: the APPLY_PRESENCE_SCRIPT), and the members of
 * each connection with the node holding it (lua/presence.ts). Every node renews a lease; the
 * members of a node that stops (killed) are reaped by the others, and the keys it issued no longer
 * name a live connection (publish on behalf) unless the connection is held by a live node now.
 *
 * Each step touches one hash slot (Redis Cluster): the channel's (presence hash, history), the
 * connection's bucket's (its member list and holder, and each node's set of the bucket's
 * connections: keys.ts), or the leases'. Steps that span several are ordered so a crash between
 * them is harmless or repaired:
 * - claim: the first claim of a node waits for its lease to be written, so a node that dies
 *   right after it is found dead (its later claims do not touch the lease: a timer renews it).
 * - enter: listed under the connection first, then in the channel. A crash between leaves a list
 *   entry with no member: taking the connection later finds nothing there and drops it.
 * - leave: out of the channel first, then off the list. A crash between leaves a stale entry: same.
 * - take: read the list, remove the members from their channels (each member is removed, and
 *   reported, by one caller only), then forget the list entries and the holder. A crash before the
 *   last step leaves the list: the next take does it again and finds the members gone.
 * - reap: find a dead node in the leases; then bucket by bucket, its connections as a take does
 *   them (a crash leaves them in the node's set of the bucket: the next reap does them again);
 *   then forget the node, once every bucket's set of it was found empty (a crash before leaves the
 *   node dead in the leases: the next reap goes through the buckets again).
 * - on a live node: the holder and the leases are read apart; a connection that moves between the
 *   reads is answered as of one node or the other, as a client resuming at that instant may be.
 * Not atomic any more: a connection claimed by another node between the first and second step of
 * a take (or reap) of its old node, and whose client re-enters in that instant, may lose that
 * member; the client's next presence update puts it back.
 */
export class RedisPresenceStore implements PresenceStore {
  private readonly applyScript: ScriptRunner
  private readonly takeMembersScript: ScriptRunner
  private readonly claimScript: ScriptRunner
  private readonly takeBeginScript: ScriptRunner
  private readonly takeEndScript: ScriptRunner
  private readonly leaseScript: ScriptRunner
  private readonly deadNodeScript: ScriptRunner
  private readonly reapBucketScript: ScriptRunner
  private readonly forgetNodeScript: ScriptRunner
  private readonly liveNodeScript: ScriptRunner
  private readonly timer: ReturnType<typeof setInterval>
  /** This node's lease written once (claims wait for it; undefined again if that failed). */
  private leased?: Promise<void>
  private readonly layout: PresenceLayout

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    readonly node: string,
    private readonly s: RedisPresenceSettings,
    onError: (e: unknown) => void,
  ) {
    this.applyScript = new ScriptRunner(cmd, APPLY_PRESENCE_SCRIPT)
    this.takeMembersScript = new ScriptRunner(cmd, TAKE_MEMBERS_SCRIPT)
    this.claimScript = new ScriptRunner(cmd, CLAIM_SCRIPT)
    this.takeBeginScript = new ScriptRunner(cmd, TAKE_BEGIN_SCRIPT)
    this.takeEndScript = new ScriptRunner(cmd, TAKE_END_SCRIPT)
    this.leaseScript = new ScriptRunner(cmd, LEASE_SCRIPT)
    this.deadNodeScript = new ScriptRunner(cmd, DEAD_NODE_SCRIPT)
    this.reapBucketScript = new ScriptRunner(cmd, REAP_BUCKET_SCRIPT)
    this.forgetNodeScript = new ScriptRunner(cmd, FORGET_NODE_SCRIPT)
    this.liveNodeScript = new ScriptRunner(cmd, LIVE_NODE_SCRIPT)
    this.layout = {
      leases: keys.presenceNodes(),
      buckets: PRESENCE_BUCKETS,
      nodeConnections: keys.presenceNodeConnections,
      connectionPrefix: keys.presenceConnectionPrefix,
      holderPrefix: keys.presenceHolderPrefix,
    }
    this.timer = setInterval(() => this.renew().catch(onError), Math.max(100, Math.floor(s.presenceLeaseMs / 3)))
    this.timer.unref?.()
    this.firstLease().catch(onError)
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.s.redisTimeoutMs)
  }

  async members(app: string, channel: string): Promise<PresenceMessage[]> {
    const vals = await this.t(this.cmd.sendCommand<Buffer[]>(['HVALS', this.keys.presence(app, channel)], BUFFERS))
    return vals.map((v) => unpack<PresenceMessage>(v))
  }

  async count(app: string, channel: string): Promise<number> {
    return Number(await this.t(this.cmd.sendCommand(['HLEN', this.keys.presence(app, channel)])))
  }

  private ttl(retention: HistoryRetention) {
    return retention.persisted ? this.s.persistedHistoryTtlMs : this.s.historyTtlMs
  }

  async apply(app: string, channel: string, events: PresenceMessage[], retention: HistoryRetention): Promise<void> {
    if (!events.length) return
    const args: Array<string | Buffer> = [String(PRESENCE_HISTORY_MAX), String(this.ttl(retention))]
    const enters = new Map<string, string[]>()
    const leaves = new Map<string, string[]>()
    for (const e of events) {
      const entry = `${app}\0${channel}\0${e.clientId}`
      const byConn = e.action === PresenceAction.LEAVE ? leaves : enters
      byConn.set(e.connectionId, [...(byConn.get(e.connectionId) ?? []), entry])
      args.push(
        String(e.action),
        `${e.connectionId}\0${e.clientId}`,
        pack({ ...e, action: PresenceAction.PRESENT }),
        pack(e),
      )
    }
    // listed under the connection before the channel has the member; off the list after it left
    await Promise.all(
      [...enters].map(([conn, entries]) =>
        this.t(this.cmd.sendCommand(['SADD', this.keys.presenceConnection(conn), ...entries])),
      ),
    )
    const keys = [this.keys.presence(app, channel), this.keys.presenceHistory(app, channel)]
    await this.t(this.applyScript.run(keys, args))
    // a member that left and entered again in this batch stays listed
    const entered = new Set([...enters].flatMap(([conn, es]) => es.map((e) => conn + '\0' + e)))
    await Promise.all(
      [...leaves].map(([conn, entries]) => {
        const gone = entries.filter((e) => !entered.has(conn + '\0' + e))
        return gone.length
          ? this.t(this.cmd.sendCommand(['SREM', this.keys.presenceConnection(conn), ...gone]))
          : undefined
      }),
    )
  }

  async history(
    app: string,
    channel: string,
    q: HistoryQuery,
    retention: HistoryRetention,
  ): Promise<PresenceMessage[]> {
    const raw = await this.t(
      this.cmd.sendCommand<Buffer[]>(['LRANGE', this.keys.presenceHistory(app, channel), '0', '-1'], BUFFERS),
    )
    return presenceHistoryPage(
      raw.map((b) => unpack<PresenceMessage>(b)),
      q,
      Date.now() - this.ttl(retention),
    )
  }

  async claim(connectionId: string): Promise<void> {
    await this.firstLease()
    const bucket = presenceBucket(connectionId)
    await this.t(
      this.claimScript.run(
        [this.keys.presenceHolder(connectionId)],
        [this.keys.presenceNodeConnections('', bucket), this.node, connectionId],
      ),
    )
  }

  async ofConnection(connectionId: string): Promise<OrphanMember[]> {
    const entries = await this.t(
      this.cmd.sendCommand<string[]>(['SMEMBERS', this.keys.presenceConnection(connectionId)]),
    )
    const out: OrphanMember[] = []
    const found = await Promise.all(
      entries.map((e) => {
        const [app, channel, client] = splitEntry(String(e))
        return this.t(
          this.cmd.sendCommand(['HGET', this.keys.presence(app, channel), `${connectionId}\0${client}`], BUFFERS),
        ).then((v) => [app, channel, v as Buffer | null] as const)
      }),
    )
    for (const [appId, channel, v] of found) if (v) out.push({ appId, channel, member: unpack<PresenceMessage>(v) })
    return out
  }

  async take(connectionId: string): Promise<OrphanMember[]> {
    const reply = await this.t(
      this.takeBeginScript.run<Array<string | null>>(
        [this.keys.presenceHolder(connectionId), this.keys.presenceConnection(connectionId)],
        [this.node],
      ),
    )
    if (reply[0] === null || reply[0] === undefined) return []
    const holder = String(reply[0])
    const entries = reply.slice(1).map(String)
    const out = await this.takeMembers(connectionId, entries)
    await this.takeEnd(connectionId, holder, '', entries)
    return out
  }

  /** Removes a connection's listed members from their channels (one step per channel); returns those found. */
  private async takeMembers(connectionId: string, entries: string[]): Promise<OrphanMember[]> {
    const byChannel = new Map<string, { app: string; channel: string; fields: string[] }>()
    for (const e of entries) {
      const [app, channel, client] = splitEntry(e)
      const k = `${app}\0${channel}`
      let g = byChannel.get(k)
      if (!g) byChannel.set(k, (g = { app, channel, fields: [] }))
      g.fields.push(`${connectionId}\0${client}`)
    }
    const out: OrphanMember[] = []
    const taken = await Promise.all(
      [...byChannel.values()].map((g) =>
        this.t(
          this.takeMembersScript.run<Array<Buffer | null>>([this.keys.presence(g.app, g.channel)], g.fields, BUFFERS),
        ).then((vals) => [g, vals] as const),
      ),
    )
    for (const [g, vals] of taken)
      for (const v of vals) if (v) out.push({ appId: g.app, channel: g.channel, member: unpack<PresenceMessage>(v) })
    return out
  }

  /** The last step of a take: see TAKE_END_SCRIPT. `at`: the connection's bucket. */
  private async takeEnd(
    connectionId: string,
    holder: string,
    from: string,
    entries: string[],
    at = presenceBucket(connectionId),
  ) {
    const layout = this.layout
    await this.t(
      this.takeEndScript.run(
        [layout.connectionPrefix(at) + connectionId, layout.holderPrefix(at) + connectionId],
        [layout.nodeConnections('', at), connectionId, holder, from, ...entries],
      ),
    )
  }

  async reap(): Promise<OrphanMember[]> {
    const out: OrphanMember[] = []
    await this.reapIn(this.layout, out, { calls: REAP_CALLS })
    return out
  }

  /** Reaps the dead nodes, within `budget` script calls (the next reap goes on). */
  private async reapIn(layout: PresenceLayout, out: OrphanMember[], budget: { calls: number }) {
    while (budget.calls-- > 0) {
      const node = await this.t(this.deadNodeScript.run([layout.leases], []))
      if (node === null || node === undefined) return
      // reapers of the same node start at different buckets, so they mostly do different ones
      const first = Math.floor(Math.random() * layout.buckets)
      for (let i = 0; i < layout.buckets; i++) {
        const bucket = (first + i) % layout.buckets
        for (let left = true; left;) {
          if (budget.calls-- <= 0) return
          left = await this.reapStep(layout, String(node), bucket, out)
        }
      }
      await this.t(this.forgetNodeScript.run([layout.leases], [String(node)]))
    }
  }

  /** Reaps up to REAP_STEP of a dead node's connections of one bucket; false when it had none left there. */
  private async reapStep(layout: PresenceLayout, node: string, bucket: number, out: OrphanMember[]) {
    const reply = await this.t(
      this.reapBucketScript.run<Array<string | number>>(
        [layout.nodeConnections(node, bucket)],
        [layout.connectionPrefix(bucket), layout.holderPrefix(bucket), node, String(REAP_STEP)],
      ),
    )
    for (let i = 1; i < reply.length;) {
      const conn = String(reply[i])
      const n = Number(reply[i + 1])
      const entries = reply.slice(i + 2, i + 2 + n).map(String)
      i += 2 + n
      out.push(...(await this.takeMembers(conn, entries)))
      await this.takeEnd(conn, node, node, entries, bucket)
    }
    return Number(reply[0]) > 0
  }

  async onLiveNode(issuer: string, connectionId: string): Promise<boolean> {
    const [issuerLive, holder] = await Promise.all([
      this.live(issuer),
      this.t(this.cmd.sendCommand(['GET', this.keys.presenceHolder(connectionId)])),
    ])
    if (issuerLive) return true
    return holder !== null && holder !== undefined && String(holder) !== issuer && this.live(String(holder))
  }

  /** Whether `node`'s lease has not run out. */
  private async live(node: string): Promise<boolean> {
    return Number(await this.t(this.liveNodeScript.run([this.layout.leases], [node]))) === 1
  }

  /** Writes this node's lease once (again after a failure): a claim is answered only once the lease exists. */
  private firstLease(): Promise<void> {
    this.leased ??= this.renew().catch((e) => {
      this.leased = undefined
      throw e
    })
    return this.leased
  }

  /** Renews this node's lease. */
  private async renew() {
    await this.t(this.leaseScript.run([this.layout.leases], [this.node, String(this.s.presenceLeaseMs)]))
  }

  /** Stops renewing the lease (shutdown): what this node still holds is reaped once it lapses. */
  close() {
    clearInterval(this.timer)
  }
}
