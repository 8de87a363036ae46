import {
  FAILED_AFTER,
  subscriptionKey,
  type DeliveryOutcome,
  type DeviceQuery,
  type DeviceRecord,
  type PushStore,
  type SubscriptionQuery,
  type SubscriptionRecord,
} from '../../core/push/ports'
import { withTimeout } from './errors'
import type { RedisCommander } from './clients'
import type { RedisKeys } from './keys'
import {
  PUSH_CHANNELS_SCRIPT,
  PUSH_DELETE_DEVICE_SCRIPT,
  PUSH_PUT_DEVICE_SCRIPT,
  PUSH_RECORD_DELIVERY_SCRIPT,
  PUSH_SUBSCRIBE_SCRIPT,
  PUSH_UNSUBSCRIBE_SCRIPT,
} from './lua/push'
import { ScriptRunner } from './script-runner'

type Fields = [string | null, string | null, string | null, string | null]
const FIELDS = ['d', 's', 'f', 'e']
const SCAN = 200

const member = (s: SubscriptionRecord) => subscriptionKey(s).join('\0')
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))

function parseMember(m: string): SubscriptionRecord {
  const [channel, kind, id] = m.split('\0') as [string, string, string]
  return kind === 'd' ? { channel, deviceId: id } : { channel, clientId: id }
}

function toDevice(f: Fields | null): DeviceRecord | undefined {
  if (!f || f[0] === null || f[0] === undefined) return undefined
  const d = JSON.parse(f[0]) as DeviceRecord
  d.state = (f[1] ?? 'ACTIVE') as DeviceRecord['state']
  d.failures = Number(f[2] ?? 0)
  if (f[3]) d.error = JSON.parse(f[3])
  return d
}

/**
 * Push state in Redis, shared by every node (keys.ts push*, scripts lua/push.ts): one hash
 * per device, id sets per app and per client for listing, and one sorted set of subscriptions
 * per app (lexicographic: by channel, kind, id) with a channel set per subscriber.
 */
export class RedisPushStore implements PushStore {
  private readonly putScript: ScriptRunner
  private readonly deleteScript: ScriptRunner
  private readonly deliveryScript: ScriptRunner
  private readonly subscribeScript: ScriptRunner
  private readonly unsubscribeScript: ScriptRunner
  private readonly channelsScript: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
  ) {
    this.putScript = new ScriptRunner(cmd, PUSH_PUT_DEVICE_SCRIPT)
    this.deleteScript = new ScriptRunner(cmd, PUSH_DELETE_DEVICE_SCRIPT)
    this.deliveryScript = new ScriptRunner(cmd, PUSH_RECORD_DELIVERY_SCRIPT)
    this.subscribeScript = new ScriptRunner(cmd, PUSH_SUBSCRIBE_SCRIPT)
    this.unsubscribeScript = new ScriptRunner(cmd, PUSH_UNSUBSCRIBE_SCRIPT)
    this.channelsScript = new ScriptRunner(cmd, PUSH_CHANNELS_SCRIPT)
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.timeoutMs)
  }

  private fields(app: string, id: string): Promise<Fields> {
    return this.cmd.sendCommand<Fields>(['HMGET', this.keys.pushDevice(app, id), ...FIELDS])
  }

  async getDevice(app: string, id: string): Promise<DeviceRecord | undefined> {
    return toDevice(await this.t(this.fields(app, id)))
  }

  async putDevice(d: DeviceRecord): Promise<void> {
    const { state, failures, error, ...rest } = d
    await this.t(
      this.putScript.run(
        [this.keys.pushDevice(d.appId, d.id), this.keys.pushDevices(d.appId)],
        [
          d.id,
          JSON.stringify(rest),
          d.clientId ?? '',
          state,
          String(failures),
          error ? JSON.stringify(error) : '',
          this.keys.pushClientDevicesPrefix(d.appId),
        ],
      ),
    )
  }

  async listDevices(app: string, q: DeviceQuery): Promise<DeviceRecord[]> {
    const keep = (d: DeviceRecord | undefined): d is DeviceRecord =>
      !!d && (q.clientId === undefined || d.clientId === q.clientId) && (q.state === undefined || d.state === q.state)
    if (q.deviceId !== undefined) {
      const d = await this.getDevice(app, q.deviceId)
      return keep(d) && (q.after === undefined || byBytes(d.id, q.after) > 0) && q.limit > 0 ? [d] : []
    }
    const source =
      q.clientId !== undefined ? this.keys.pushClientDevicesPrefix(app) + q.clientId : this.keys.pushDevices(app)
    const out: DeviceRecord[] = []
    let from = q.after === undefined ? '-' : `(${q.after}`
    while (out.length < q.limit) {
      const count = q.state === undefined ? q.limit - out.length : SCAN
      const ids = await this.t(
        this.cmd.sendCommand<string[]>(['ZRANGEBYLEX', source, from, '+', 'LIMIT', '0', String(count)]),
      )
      const devices = await this.t(Promise.all(ids.map((id) => this.fields(app, id))))
      for (const f of devices) {
        const d = toDevice(f)
        if (keep(d) && out.length < q.limit) out.push(d)
      }
      if (ids.length < count) break
      from = `(${ids[ids.length - 1]}`
    }
    return out
  }

  async deleteDevices(app: string, q: { deviceId?: string; clientId?: string }): Promise<number> {
    const ids =
      q.deviceId !== undefined
        ? [q.deviceId]
        : q.clientId !== undefined
          ? await this.t(
              this.cmd.sendCommand<string[]>([
                'ZRANGE',
                this.keys.pushClientDevicesPrefix(app) + q.clientId,
                '0',
                '-1',
              ]),
            )
          : []
    const removed = await this.t(
      Promise.all(
        ids.map((id) =>
          this.deleteScript.run(
            [
              this.keys.pushDevice(app, id),
              this.keys.pushDevices(app),
              this.keys.pushSubscriptions(app),
              `${this.keys.pushTargetPrefix(app)}d:${id}`,
            ],
            [id, this.keys.pushClientDevicesPrefix(app), q.clientId ?? ''],
          ),
        ),
      ),
    )
    return removed.reduce((n: number, r) => n + Number(r), 0)
  }

  async recordDelivery(app: string, id: string, outcome: DeliveryOutcome): Promise<DeviceRecord | undefined> {
    const r = await this.t(
      this.deliveryScript.run<Fields | null>(
        [this.keys.pushDevice(app, id)],
        [outcome.ok ? '1' : '0', outcome.ok ? '' : JSON.stringify(outcome.error), String(FAILED_AFTER)],
      ),
    )
    return toDevice(r)
  }

  async putSubscription(app: string, s: SubscriptionRecord): Promise<void> {
    const [channel, kind, id] = subscriptionKey(s)
    await this.t(
      this.subscribeScript.run(
        [this.keys.pushSubscriptions(app), `${this.keys.pushTargetPrefix(app)}${kind}:${id}`],
        [member(s), channel],
      ),
    )
  }

  async listSubscriptions(app: string, q: SubscriptionQuery): Promise<SubscriptionRecord[]> {
    const targets: Array<[string, string]> = []
    if (q.deviceId !== undefined) targets.push(['d', q.deviceId])
    if (q.clientId !== undefined) targets.push(['c', q.clientId])
    const after = q.after ? member(q.after) : undefined
    if (targets.length) {
      // a subscription has one subscriber: both filters match only with concat (OR)
      if (targets.length === 2 && !q.concat) return []
      const sets = await this.t(
        Promise.all(
          targets.map(([kind, id]) =>
            this.cmd.sendCommand<string[]>(['SMEMBERS', `${this.keys.pushTargetPrefix(app)}${kind}:${id}`]),
          ),
        ),
      )
      const members = targets.flatMap(([kind, id], i) =>
        sets[i]!.filter((ch) => q.channel === undefined || ch === q.channel).map((ch) => `${ch}\0${kind}\0${id}`),
      )
      return members
        .sort(byBytes)
        .filter((m) => after === undefined || byBytes(m, after) > 0)
        .slice(0, q.limit)
        .map(parseMember)
    }
    const min = after !== undefined ? `(${after}` : q.channel !== undefined ? `[${q.channel}\0` : '-'
    const max = q.channel !== undefined ? `[${q.channel}\u0001` : '+'
    const ms = await this.t(
      this.cmd.sendCommand<string[]>([
        'ZRANGEBYLEX',
        this.keys.pushSubscriptions(app),
        min,
        max,
        'LIMIT',
        '0',
        String(q.limit),
      ]),
    )
    return ms.map(parseMember)
  }

  async deleteSubscriptions(
    app: string,
    q: { channel?: string; deviceId?: string; clientId?: string },
  ): Promise<number> {
    const [kind, id] =
      q.deviceId !== undefined ? ['d', q.deviceId] : q.clientId !== undefined ? ['c', q.clientId] : ['', '']
    if (q.deviceId !== undefined && q.clientId !== undefined) return 0
    if (kind === '' && q.channel === undefined) return 0
    const n = await this.t(
      this.unsubscribeScript.run(
        [this.keys.pushSubscriptions(app)],
        [this.keys.pushTargetPrefix(app), q.channel ?? '', kind, id],
      ),
    )
    return Number(n)
  }

  async channels(app: string, after: string | undefined, limit: number): Promise<string[]> {
    return await this.t(
      this.channelsScript.run<string[]>([this.keys.pushSubscriptions(app)], [after ?? '', String(limit)]),
    )
  }
}
