import type { OrphanMember, PresenceStore } from '../../core/ports'
import { PresenceAction, type HistoryQuery, type PresenceMessage } from '../../core/types'
import { presenceHistoryPage } from '../shared/presence-history'
import { BUFFERS, withTimeout, type RedisCommander } from './connection'
import { pack, unpack } from './codec'
import type { RedisKeys } from './keys'
import {
  APPLY_PRESENCE_SCRIPT,
  CLAIM_SCRIPT,
  LEASE_SCRIPT,
  ON_LIVE_NODE_SCRIPT,
  REAP_BEGIN_SCRIPT,
  TAKE_BEGIN_SCRIPT,
  TAKE_END_SCRIPT,
  TAKE_MEMBERS_SCRIPT,
} from './presence-scripts'
import { ScriptRunner } from './script-runner'

const HISTORY_MAX = 1000
/** Connections reaped per script call (a dead node's are taken in steps, so Redis is never held long). */
const REAP_STEP = 100

export interface RedisPresenceSettings {
  redisTimeoutMs: number
  /** A node that has not renewed its lease for this long is dead: its members leave (ms). */
  presenceLeaseMs: number
}

/** A member list entry `<app>\0<channel>\0<clientId>`, split. */
function splitEntry(e: string): [string, string, string] {
  const a = e.indexOf('\0')
  const b = e.indexOf('\0', a + 1)
  return [e.slice(0, a), e.slice(a + 1, b), e.slice(b + 1)]
}

/**
 * Presence sets (hash member -> message), capped presence history (list), and the members of
 * each connection with the node holding it (presence-scripts.ts). Every node renews a lease; the
 * members of a node that stops (killed) are reaped by the others, and the keys it issued no longer
 * name a live connection (publish on behalf) unless the connection is held by a live node now.
 *
 * Each step touches one hash slot (Redis Cluster): the channel's (presence hash, history) or the
 * `{pc}` slot (member lists by connection, holders, node sets, leases). Steps that span both are
 * ordered so a crash between them is harmless or repaired:
 * - enter: listed under the connection first, then in the channel. A crash between leaves a list
 *   entry with no member: taking the connection later finds nothing there and drops it.
 * - leave: out of the channel first, then off the list. A crash between leaves a stale entry: same.
 * - take and reap: read the list, remove the members from their channels (each member is removed,
 *   and reported, by one caller only), then forget the list entries and the holder. A crash
 *   before the last step leaves the list (and, for a reap, the dead node's set): the next take or
 *   reap does it again and finds the members gone.
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
  private readonly reapScript: ScriptRunner
  private readonly onLiveNodeScript: ScriptRunner
  private readonly timer: ReturnType<typeof setInterval>

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    readonly node: string,
    private readonly s: RedisPresenceSettings,
    private readonly onError: (e: unknown) => void,
  ) {
    this.applyScript = new ScriptRunner(cmd, APPLY_PRESENCE_SCRIPT)
    this.takeMembersScript = new ScriptRunner(cmd, TAKE_MEMBERS_SCRIPT)
    this.claimScript = new ScriptRunner(cmd, CLAIM_SCRIPT)
    this.takeBeginScript = new ScriptRunner(cmd, TAKE_BEGIN_SCRIPT)
    this.takeEndScript = new ScriptRunner(cmd, TAKE_END_SCRIPT)
    this.leaseScript = new ScriptRunner(cmd, LEASE_SCRIPT)
    this.reapScript = new ScriptRunner(cmd, REAP_BEGIN_SCRIPT)
    this.onLiveNodeScript = new ScriptRunner(cmd, ON_LIVE_NODE_SCRIPT)
    this.timer = setInterval(() => this.renew().catch(onError), Math.max(100, Math.floor(s.presenceLeaseMs / 3)))
    this.timer.unref?.()
    this.renew().catch(onError)
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.s.redisTimeoutMs)
  }

  private prefixes(): string[] {
    const k = this.keys
    return [k.presenceConnection(''), k.presenceHolder(''), k.presenceNodeConnections('')]
  }

  async members(app: string, channel: string): Promise<PresenceMessage[]> {
    const vals = (await this.t(
      this.cmd.sendCommand(['HVALS', this.keys.presence(app, channel)], BUFFERS),
    )) as unknown as Buffer[]
    return vals.map((v) => unpack<PresenceMessage>(v))
  }

  async count(app: string, channel: string): Promise<number> {
    return Number(await this.t(this.cmd.sendCommand(['HLEN', this.keys.presence(app, channel)])))
  }

  async apply(app: string, channel: string, events: PresenceMessage[]): Promise<void> {
    if (!events.length) return
    const args: Array<string | Buffer> = [String(HISTORY_MAX)]
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

  async history(app: string, channel: string, q: HistoryQuery): Promise<PresenceMessage[]> {
    const raw = (await this.t(
      this.cmd.sendCommand(['LRANGE', this.keys.presenceHistory(app, channel), '0', '-1'], BUFFERS),
    )) as unknown as Buffer[]
    return presenceHistoryPage(
      raw.map((b) => unpack<PresenceMessage>(b)),
      q,
    )
  }

  async claim(connectionId: string): Promise<void> {
    await this.t(
      this.claimScript.run(
        [this.keys.presenceNodes(), this.keys.presenceHolder(connectionId)],
        [...this.prefixes(), this.node, connectionId, String(this.s.presenceLeaseMs)],
      ),
    )
  }

  async ofConnection(connectionId: string): Promise<OrphanMember[]> {
    const entries = (await this.t(
      this.cmd.sendCommand(['SMEMBERS', this.keys.presenceConnection(connectionId)]),
    )) as unknown as string[]
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
    const reply = (await this.t(
      this.takeBeginScript.run(
        [this.keys.presenceHolder(connectionId), this.keys.presenceConnection(connectionId)],
        [this.node],
      ),
    )) as unknown as Array<string | null>
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
        this.t(this.takeMembersScript.run([this.keys.presence(g.app, g.channel)], g.fields, BUFFERS)).then(
          (vals) => [g, vals as unknown as Array<Buffer | null>] as const,
        ),
      ),
    )
    for (const [g, vals] of taken)
      for (const v of vals) if (v) out.push({ appId: g.app, channel: g.channel, member: unpack<PresenceMessage>(v) })
    return out
  }

  private async takeEnd(connectionId: string, holder: string, from: string, entries: string[]) {
    await this.t(
      this.takeEndScript.run(
        [this.keys.presenceConnection(connectionId), this.keys.presenceHolder(connectionId)],
        [...this.prefixes(), connectionId, holder, from, ...entries],
      ),
    )
  }

  async reap(): Promise<OrphanMember[]> {
    const out: OrphanMember[] = []
    for (let step = 0; step < 1000; step++) {
      const reply = (await this.t(
        this.reapScript.run([this.keys.presenceNodes()], [...this.prefixes(), String(REAP_STEP)]),
      )) as unknown as Array<string | number>
      if (Number(reply[0]) !== 1) break
      const node = String(reply[1])
      for (let i = 2; i < reply.length;) {
        const conn = String(reply[i])
        const n = Number(reply[i + 1])
        const entries = reply.slice(i + 2, i + 2 + n).map(String)
        i += 2 + n
        out.push(...(await this.takeMembers(conn, entries)))
        await this.takeEnd(conn, node, node, entries)
      }
    }
    return out
  }

  async onLiveNode(issuer: string, connectionId: string): Promise<boolean> {
    const reply = await this.t(
      this.onLiveNodeScript.run([this.keys.presenceNodes(), this.keys.presenceHolder(connectionId)], [issuer]),
    )
    return Number(reply) === 1
  }

  private async renew() {
    await this.t(this.leaseScript.run([this.keys.presenceNodes()], [this.node, String(this.s.presenceLeaseMs)]))
  }

  /** Stops renewing the lease (shutdown): what this node still holds is reaped once it lapses. */
  close() {
    clearInterval(this.timer)
  }
}

/** App, channel, packed member triples as orphans. */
function orphans(reply: Buffer[]): OrphanMember[] {
  const out: OrphanMember[] = []
  for (let i = 0; i + 2 < reply.length; i += 3)
    out.push({
      appId: reply[i]!.toString(),
      channel: reply[i + 1]!.toString(),
      member: unpack<PresenceMessage>(reply[i + 2]!),
    })
  return out
}
