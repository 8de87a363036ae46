import { GatewayError } from '../../errors'
import { randomId } from '../../lib/crypto'
import { canonicalCapability, parseCapability } from '../auth/capability'
import type { Principal } from '../auth/principal'
import type { Clock, ControlStore } from '../ports'
import type { StatsService } from '../stats/stats-service'
import { flattenLegacyStats } from '../stats/entries'
import { parseTime } from '../stats/intervals'
import type { Namespace, PresenceMessage } from '../types'

/**
 * What a sandbox app was created with, in the hosted sandbox's response shape. A key's
 * `capability` is the canonical JSON a token request for that key returns (resources and
 * operations sorted), so test suites can compare the two as strings.
 */
export interface SandboxApp {
  appId: string
  accountId: string
  keys: Array<{ keyName: string; keySecret: string; keyStr: string; capability: string }>
  namespaces: Namespace[]
}

const ENTER = 2
const bad = (m: string) => new GatewayError(40000, m)
const list = (v: unknown, field: string): Record<string, unknown>[] => {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v) || !v.every((x) => x && typeof x === 'object'))
    throw bad(`${field} must be an array of objects`)
  return v as Record<string, unknown>[]
}

/**
 * Throwaway apps for test suites and load tests, as the hosted service's sandbox makes them: one
 * call creates an app with keys, namespaces and channels with members already present.
 */
export class Sandbox {
  constructor(
    private readonly control: ControlStore,
    /** Where fixture members enter (the presence service: through the channel's log). */
    private readonly presence: { publish(appId: string, channel: string, events: PresenceMessage[]): Promise<unknown> },
    private readonly stats: StatsService,
    private readonly clock: Clock,
    /** Deletes an app with its queues wherever they are (AppRemoval); by default only its records. */
    private readonly removeApp: (appId: string) => Promise<void> = (appId) => control.deleteApp(appId),
  ) {}

  async provision(body: Record<string, unknown>): Promise<SandboxApp> {
    const keySpecs = list(body.keys, 'keys')
    const nsSpecs = list(body.namespaces, 'namespaces')
    const channelSpecs = list(body.channels, 'channels')
    const capabilities = keySpecs.map((k) =>
      k.capability === undefined ? { '*': ['*'] } : parseCapability(k.capability),
    )
    const account = (await this.control.listAccounts())[0]
    if (!account) throw new GatewayError(50000, 'No account to create sandbox apps in')
    const now = this.clock.now()
    const appId = randomId(6)
    const maxMembers = (body.limits as { presence?: { maxMembers?: unknown } } | undefined)?.presence?.maxMembers
    if (maxMembers !== undefined && (!Number.isInteger(maxMembers) || (maxMembers as number) < 1))
      throw bad('limits.presence.maxMembers must be a positive integer')
    await this.control.createApp({
      id: appId,
      accountId: account.id,
      name: `sandbox-${appId}`,
      status: 'enabled',
      tlsOnly: false,
      sandbox: true,
      created: now,
      modified: now,
      ...(maxMembers === undefined ? {} : { limits: { presenceMaxMembers: maxMembers as number } }),
    })
    const keys: SandboxApp['keys'] = []
    for (const [i, spec] of keySpecs.entries()) {
      const key = {
        appId,
        id: randomId(6),
        name: `key${i}`,
        secret: randomId(43),
        capability: capabilities[i]!,
        status: 0 as const,
        revocableTokens: spec.revocableTokens === true,
        created: now,
        modified: now,
      }
      await this.control.createKey(key)
      keys.push({
        keyName: `${appId}.${key.id}`,
        keySecret: key.secret,
        keyStr: `${appId}.${key.id}:${key.secret}`,
        capability: canonicalCapability(key.capability),
      })
    }
    const namespaces: Namespace[] = []
    for (const spec of nsSpecs) {
      if (typeof spec.id !== 'string' || !spec.id) throw bad('each namespace needs an id')
      const ns: Namespace = {
        appId,
        id: spec.id,
        persisted: spec.persisted === true,
        pushEnabled: spec.pushEnabled === true,
        mutableMessages: spec.mutableMessages === true,
      }
      await this.control.putNamespace(ns)
      namespaces.push(ns)
    }
    for (const ch of channelSpecs) {
      if (typeof ch.name !== 'string' || !ch.name) throw bad('each channel needs a name')
      const connectionId = randomId(10)
      const members: PresenceMessage[] = list(ch.presence, 'presence').map((m, i) => {
        if (typeof m.clientId !== 'string') throw bad('each presence member needs a clientId')
        // data and encoding are kept exactly as given, never decoded
        const p: PresenceMessage = {
          id: `${connectionId}:${i}:0`,
          action: ENTER,
          clientId: m.clientId,
          connectionId,
          timestamp: now,
        }
        if (m.data !== undefined) p.data = m.data as string
        if (typeof m.encoding === 'string') p.encoding = m.encoding
        return p
      })
      if (members.length) await this.presence.publish(appId, ch.name, members)
    }
    return { appId, accountId: account.id, keys, namespaces }
  }

  /**
   * The hosted sandbox's test hook on a publish (`_forceNack=true`, RSL1l1): the publish is refused
   * with 40099, on sandbox apps only; on any other app the parameter means nothing.
   */
  async forceNack(p: Principal, params: Record<string, string | undefined>): Promise<void> {
    if (params._forceNack !== 'true') return
    if ((await this.control.getApp(p.appId))?.sandbox) throw new GatewayError(40099, 'Publish refused (_forceNack)')
  }

  /** `DELETE /apps/{appId}` with one of that app's keys. */
  async remove(p: Principal, appId: string): Promise<void> {
    // 401, not the table's 403: these credentials are not the app's (as the hosted sandbox answers)
    if (p.appId !== appId) throw new GatewayError(40160, 'Credentials of another app', { status: 401 })
    await this.removeApp(appId)
  }

  /** `POST /stats`: records in the older nested form, stored as flattened entries. */
  loadStats(p: Principal, records: unknown): number {
    if (!Array.isArray(records)) throw bad('body must be an array of stats records')
    for (const r of records as Record<string, unknown>[]) {
      const at = typeof r.intervalId === 'string' ? parseTime(r.intervalId) : undefined
      if (at === undefined) throw bad('each record needs an intervalId (yyyy-mm-dd:hh:mm)')
      this.stats.load(p.appId, p.accountId, at, flattenLegacyStats(r))
    }
    return records.length
  }
}
