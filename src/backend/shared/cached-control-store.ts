import type { BootstrapOutcome, BootstrapSeed, ControlEvent, ControlStore } from '../../core/ports'
import type { AccessToken, Account, ApiKey, App, Namespace, Queue, Rule } from '../../core/types'

export type ControlKind = 'account' | 'app' | 'key' | 'namespace' | 'token' | 'rule' | 'queue'
export const CONTROL_KINDS: ControlKind[] = ['account', 'app', 'key', 'namespace', 'token', 'rule', 'queue']

export interface ControlRecord {
  kind: ControlKind
  id: string
  parent: string
  value: object | undefined
}

/**
 * Control records served from memory (reads never wait on storage) and written through to a
 * durable store by the subclass. `apply` is how a subclass feeds in records it loaded or learned
 * about from another node; listeners hear about every change, local or remote.
 */
export abstract class CachedControlStore implements ControlStore {
  private maps: Record<ControlKind, Map<string, any>> = {
    account: new Map(),
    app: new Map(),
    key: new Map(),
    namespace: new Map(),
    token: new Map(),
    rule: new Map(),
    queue: new Map(),
  }
  private listeners = new Set<(e: ControlEvent) => void>()

  /** Durably stores a record, or deletes it when `value` is undefined (and tells other nodes). */
  protected abstract persist(r: ControlRecord, event: ControlEvent): Promise<void>

  /** Puts a record into memory and notifies listeners. */
  protected apply(kind: ControlKind, id: string, value: object | undefined, event: ControlEvent) {
    if (value === undefined) this.maps[kind].delete(id)
    else this.maps[kind].set(id, value)
    for (const l of this.listeners) l(event)
  }

  private async put(kind: ControlKind, id: string, parent: string, value: object | undefined, event: ControlEvent) {
    await this.persist({ kind, id, parent, value }, event)
    this.apply(kind, id, value, event)
  }

  private list<T>(kind: ControlKind, pred: (v: T) => boolean): T[] {
    return [...this.maps[kind].values()].filter(pred)
  }

  async listAccounts() {
    return this.list<Account>('account', () => true)
  }
  async getAccount(id: string) {
    return this.maps.account.get(id) as Account | undefined
  }
  async createAccount(a: Account) {
    await this.put('account', a.id, '', a, { kind: 'account' })
  }
  async getApp(id: string) {
    return this.maps.app.get(id) as App | undefined
  }
  async listApps(accountId: string) {
    return this.list<App>('app', (a) => a.accountId === accountId)
  }
  async createApp(a: App) {
    await this.put('app', a.id, a.accountId, a, { kind: 'app', appId: a.id })
  }
  async deleteApp(id: string) {
    const app = this.maps.app.get(id) as App | undefined
    if (!app) return
    for (const k of await this.listKeys(id))
      await this.put('key', `${id}.${k.id}`, id, undefined, { kind: 'key', appId: id })
    for (const n of await this.listNamespaces(id))
      await this.put('namespace', `${id}:${n.id}`, id, undefined, { kind: 'namespace', appId: id })
    for (const r of await this.listRules(id)) await this.deleteRule(id, r.id)
    for (const q of await this.listQueues(id)) await this.deleteQueue(id, q.id)
    await this.put('app', id, app.accountId, undefined, { kind: 'app', appId: id })
  }
  async getKey(keyName: string) {
    return this.maps.key.get(keyName) as ApiKey | undefined
  }
  async listKeys(appId: string) {
    return this.list<ApiKey>('key', (k) => k.appId === appId)
  }
  async createKey(k: ApiKey) {
    await this.put('key', `${k.appId}.${k.id}`, k.appId, k, { kind: 'key', appId: k.appId })
  }
  async listNamespaces(appId: string) {
    return this.list<Namespace>('namespace', (n) => n.appId === appId)
  }
  async putNamespace(n: Namespace) {
    await this.put('namespace', `${n.appId}:${n.id}`, n.appId, n, { kind: 'namespace', appId: n.appId })
  }
  async deleteNamespace(appId: string, id: string) {
    await this.put('namespace', `${appId}:${id}`, appId, undefined, { kind: 'namespace', appId })
  }
  async listRules(appId: string) {
    return this.list<Rule>('rule', (r) => r.appId === appId)
  }
  async putRule(r: Rule) {
    await this.put('rule', `${r.appId}:${r.id}`, r.appId, r, { kind: 'rule', appId: r.appId })
  }
  async deleteRule(appId: string, id: string) {
    await this.put('rule', `${appId}:${id}`, appId, undefined, { kind: 'rule', appId })
  }
  async listQueues(appId: string) {
    return this.list<Queue>('queue', (q) => q.appId === appId)
  }
  async putQueue(q: Queue) {
    await this.put('queue', q.id, q.appId, q, { kind: 'queue', appId: q.appId })
  }
  async deleteQueue(appId: string, id: string) {
    await this.put('queue', id, appId, undefined, { kind: 'queue', appId })
  }
  async getAccessTokenByHash(hash: string) {
    return this.list<AccessToken>('token', (t) => t.hash === hash)[0]
  }
  async createAccessToken(t: AccessToken) {
    await this.put('token', t.id, t.accountId, t, { kind: 'account' })
  }

  /** The seed's records as stored, with the event each announces. */
  protected seedRecords(seed: BootstrapSeed): Array<ControlRecord & { event: ControlEvent }> {
    const { account, app, key, token } = seed
    return [
      { kind: 'account', id: account.id, parent: '', value: account, event: { kind: 'account' } },
      { kind: 'app', id: app.id, parent: app.accountId, value: app, event: { kind: 'app', appId: app.id } },
      {
        kind: 'key',
        id: `${key.appId}.${key.id}`,
        parent: key.appId,
        value: key,
        event: { kind: 'key', appId: key.appId },
      },
      { kind: 'token', id: token.id, parent: token.accountId, value: token, event: { kind: 'account' } },
    ]
  }

  abstract bootstrap(seed: BootstrapSeed, acceptDataLoss: boolean): Promise<BootstrapOutcome>
  abstract epoch(): Promise<string | undefined>
  abstract markDataLost(): Promise<void>
  abstract secret(): Promise<string>

  onChange(listener: (e: ControlEvent) => void) {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  abstract ready(): Promise<boolean>
  abstract close(): Promise<void>
}
