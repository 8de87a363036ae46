import type { OrphanMember, PresenceStore } from '../../core/ports'
import { PresenceAction, type HistoryQuery, type PresenceMessage } from '../../core/types'
import { presenceHistoryPage } from '../shared/presence-history'
import { BUFFERS, withTimeout, type RedisClient } from './connection'
import { pack, unpack } from './codec'
import type { RedisKeys } from './keys'
import {
  APPLY_PRESENCE_SCRIPT,
  CLAIM_SCRIPT,
  LEASE_SCRIPT,
  OF_CONNECTION_SCRIPT,
  REAP_SCRIPT,
  TAKE_SCRIPT,
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

/**
 * Presence sets (hash member -> message), capped presence history (list), and the members of
 * each connection with the node holding it (presence-scripts.ts). Every node renews a lease; the
 * members of a node that stops (killed) are reaped by the others.
 */
export class RedisPresenceStore implements PresenceStore {
  private readonly applyScript: ScriptRunner
  private readonly claimScript: ScriptRunner
  private readonly takeScript: ScriptRunner
  private readonly ofConnectionScript: ScriptRunner
  private readonly leaseScript: ScriptRunner
  private readonly reapScript: ScriptRunner
  private readonly timer: ReturnType<typeof setInterval>

  constructor(
    private readonly cmd: RedisClient,
    private readonly keys: RedisKeys,
    private readonly node: string,
    private readonly s: RedisPresenceSettings,
    private readonly onError: (e: unknown) => void,
  ) {
    this.applyScript = new ScriptRunner(cmd, APPLY_PRESENCE_SCRIPT)
    this.claimScript = new ScriptRunner(cmd, CLAIM_SCRIPT)
    this.takeScript = new ScriptRunner(cmd, TAKE_SCRIPT)
    this.ofConnectionScript = new ScriptRunner(cmd, OF_CONNECTION_SCRIPT)
    this.leaseScript = new ScriptRunner(cmd, LEASE_SCRIPT)
    this.reapScript = new ScriptRunner(cmd, REAP_SCRIPT)
    this.timer = setInterval(() => this.renew().catch(onError), Math.max(100, Math.floor(s.presenceLeaseMs / 3)))
    this.timer.unref?.()
    this.renew().catch(onError)
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.s.redisTimeoutMs)
  }

  private prefixes(): string[] {
    const k = this.keys
    return [k.presencePrefix(), k.presenceConnection(''), k.presenceHolder(''), k.presenceNodeConnections('')]
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
    const args: Array<string | Buffer> = [...this.prefixes(), app, channel, String(HISTORY_MAX)]
    for (const e of events)
      args.push(String(e.action), e.connectionId, e.clientId, pack({ ...e, action: PresenceAction.PRESENT }), pack(e))
    const keys = [this.keys.presence(app, channel), this.keys.presenceHistory(app, channel)]
    await this.t(this.applyScript.run(keys, args))
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
        [this.keys.presenceNodes()],
        [...this.prefixes(), this.node, connectionId, String(this.s.presenceLeaseMs)],
      ),
    )
  }

  async ofConnection(connectionId: string): Promise<OrphanMember[]> {
    const reply = await this.t(this.ofConnectionScript.run([], [...this.prefixes(), this.node, connectionId], BUFFERS))
    return orphans(reply as unknown as Buffer[])
  }

  async take(connectionId: string): Promise<OrphanMember[]> {
    const reply = await this.t(this.takeScript.run([], [...this.prefixes(), this.node, connectionId], BUFFERS))
    return orphans(reply as unknown as Buffer[])
  }

  async reap(): Promise<OrphanMember[]> {
    const out: OrphanMember[] = []
    for (let step = 0; step < 1000; step++) {
      const reply = (await this.t(
        this.reapScript.run([this.keys.presenceNodes()], [...this.prefixes(), String(REAP_STEP)], BUFFERS),
      )) as unknown as Array<Buffer | number>
      out.push(...orphans(reply.slice(1) as Buffer[]))
      if (Number(reply[0]) !== 1) break
    }
    return out
  }

  private async renew() {
    await this.t(
      this.leaseScript.run(
        [this.keys.presenceNodes()],
        [...this.prefixes(), this.node, String(this.s.presenceLeaseMs)],
      ),
    )
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
