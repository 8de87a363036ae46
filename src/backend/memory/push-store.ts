import type { Database } from 'bun:sqlite'
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

type Row = { body: string; state: string; failures: number; error: string | null }

/**
 * Push state of the embedded backend, in SQLite so registrations and subscriptions survive a
 * restart: one row per device (the registration as JSON, its delivery state in columns) and one
 * per subscription (`kind` d: a device, c: a clientId). Multi-row writes are transactions.
 */
export class SqlitePushStore implements PushStore {
  private readonly q

  constructor(private readonly db: Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS push_devices (
      app TEXT NOT NULL, id TEXT NOT NULL, client TEXT, body TEXT NOT NULL,
      state TEXT NOT NULL, failures INTEGER NOT NULL, error TEXT,
      PRIMARY KEY (app, id)) WITHOUT ROWID`)
    db.exec('CREATE INDEX IF NOT EXISTS push_devices_client ON push_devices (app, client, id)')
    db.exec(`CREATE TABLE IF NOT EXISTS push_subscriptions (
      app TEXT NOT NULL, channel TEXT NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL,
      PRIMARY KEY (app, channel, kind, target)) WITHOUT ROWID`)
    db.exec('CREATE INDEX IF NOT EXISTS push_subscriptions_target ON push_subscriptions (app, kind, target)')
    this.q = {
      get: db.prepare('SELECT body, state, failures, error FROM push_devices WHERE app = ? AND id = ?'),
      put: db.prepare(
        'INSERT OR REPLACE INTO push_devices (app, id, client, body, state, failures, error) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      setState: db.prepare('UPDATE push_devices SET state = ?, failures = ?, error = ? WHERE app = ? AND id = ?'),
      delDevice: db.prepare('DELETE FROM push_devices WHERE app = ? AND id = ?'),
      delDeviceSubs: db.prepare("DELETE FROM push_subscriptions WHERE app = ? AND kind = 'd' AND target = ?"),
      putSub: db.prepare('INSERT OR IGNORE INTO push_subscriptions (app, channel, kind, target) VALUES (?, ?, ?, ?)'),
      channels: db.prepare(
        'SELECT DISTINCT channel FROM push_subscriptions WHERE app = ? AND channel > ? ORDER BY channel LIMIT ?',
      ),
    }
  }

  async getDevice(app: string, id: string): Promise<DeviceRecord | undefined> {
    const r = this.q.get.get(app, id) as Row | null
    return r ? toDevice(r) : undefined
  }

  async putDevice(d: DeviceRecord): Promise<void> {
    const { state, failures, error, ...rest } = d
    this.q.put.run(
      d.appId,
      d.id,
      d.clientId ?? null,
      JSON.stringify(rest),
      state,
      failures,
      error ? JSON.stringify(error) : null,
    )
  }

  async listDevices(app: string, q: DeviceQuery): Promise<DeviceRecord[]> {
    const { where, args } = deviceFilter(app, q)
    where.push('id > ?')
    args.push(q.after ?? '')
    if (q.state !== undefined) {
      where.push('state = ?')
      args.push(q.state)
    }
    args.push(q.limit)
    const rows = this.db
      .prepare(`SELECT body, state, failures, error FROM push_devices WHERE ${where.join(' AND ')} ORDER BY id LIMIT ?`)
      .all(...args) as Row[]
    return rows.map(toDevice)
  }

  async deleteDevices(app: string, q: { deviceId?: string; clientId?: string }): Promise<number> {
    const { where, args } = deviceFilter(app, q)
    if (args.length === 1) return 0 // neither filter: nothing is deleted
    const select = this.db.prepare(`SELECT id FROM push_devices WHERE ${where.join(' AND ')}`)
    return this.db.transaction(() => {
      const ids = (select.all(...args) as { id: string }[]).map((r) => r.id)
      for (const id of ids) {
        this.q.delDevice.run(app, id)
        this.q.delDeviceSubs.run(app, id)
      }
      return ids.length
    })()
  }

  async recordDelivery(app: string, id: string, outcome: DeliveryOutcome): Promise<DeviceRecord | undefined> {
    return this.db.transaction(() => {
      const r = this.q.get.get(app, id) as Row | null
      if (!r) return undefined
      if (outcome.ok) this.q.setState.run('ACTIVE', 0, null, app, id)
      else {
        const failures = r.failures + 1
        this.q.setState.run(
          failures >= FAILED_AFTER ? 'FAILED' : 'FAILING',
          failures,
          JSON.stringify(outcome.error),
          app,
          id,
        )
      }
      return toDevice(this.q.get.get(app, id) as Row)
    })()
  }

  async putSubscription(app: string, s: SubscriptionRecord): Promise<void> {
    const [channel, kind, target] = subscriptionKey(s)
    this.q.putSub.run(app, channel, kind, target)
  }

  async listSubscriptions(app: string, q: SubscriptionQuery): Promise<SubscriptionRecord[]> {
    const { where, args } = subscriptionFilter(app, q)
    if (q.after) {
      const [c, k, t] = subscriptionKey(q.after)
      where.push('(channel > ? OR (channel = ? AND (kind > ? OR (kind = ? AND target > ?))))')
      args.push(c, c, k, k, t)
    }
    const rows = this.db
      .prepare(
        `SELECT channel, kind, target FROM push_subscriptions WHERE ${where.join(' AND ')} ORDER BY channel, kind, target LIMIT ?`,
      )
      .all(...args, q.limit) as { channel: string; kind: string; target: string }[]
    return rows.map((r) =>
      r.kind === 'd' ? { channel: r.channel, deviceId: r.target } : { channel: r.channel, clientId: r.target },
    )
  }

  async deleteSubscriptions(
    app: string,
    q: { channel?: string; deviceId?: string; clientId?: string },
  ): Promise<number> {
    const { where, args } = subscriptionFilter(app, q)
    return this.db.prepare(`DELETE FROM push_subscriptions WHERE ${where.join(' AND ')}`).run(...args).changes
  }

  async channels(app: string, after: string | undefined, limit: number): Promise<string[]> {
    return (this.q.channels.all(app, after ?? '', limit) as { channel: string }[]).map((r) => r.channel)
  }
}

function toDevice(r: Row): DeviceRecord {
  const d = JSON.parse(r.body) as DeviceRecord
  d.state = r.state as DeviceRecord['state']
  d.failures = r.failures
  if (r.error) d.error = JSON.parse(r.error)
  return d
}

/** WHERE clause of an app's devices with the deviceId / clientId filters that are given. */
function deviceFilter(app: string, q: { deviceId?: string; clientId?: string }) {
  const where = ['app = ?']
  const args: Array<string | number> = [app]
  if (q.deviceId !== undefined) {
    where.push('id = ?')
    args.push(q.deviceId)
  }
  if (q.clientId !== undefined) {
    where.push('client = ?')
    args.push(q.clientId)
  }
  return { where, args }
}

/** WHERE clause of the channel / deviceId / clientId filters (deviceId OR clientId with `concat`). */
function subscriptionFilter(
  app: string,
  q: { channel?: string; deviceId?: string; clientId?: string; concat?: boolean },
) {
  const where = ['app = ?']
  const args: string[] = [app]
  if (q.channel !== undefined) {
    where.push('channel = ?')
    args.push(q.channel)
  }
  const targets: string[] = []
  if (q.deviceId !== undefined) {
    targets.push("(kind = 'd' AND target = ?)")
    args.push(q.deviceId)
  }
  if (q.clientId !== undefined) {
    targets.push("(kind = 'c' AND target = ?)")
    args.push(q.clientId)
  }
  if (targets.length) where.push(`(${targets.join(q.concat ? ' OR ' : ' AND ')})`)
  return { where, args }
}
