import type { Database } from 'bun:sqlite'
import type { ControlEvent, ControlStore } from '../../core/ports'
import type { AccessToken, Account, ApiKey, App, Namespace } from '../../core/types'

type Kind = 'account' | 'app' | 'key' | 'namespace' | 'token'

/**
 * Control records kept in memory and written through to SQLite (`records` table), so reads
 * never touch the disk and a restart loses nothing.
 */
export class SqliteControlStore implements ControlStore {
  private maps: Record<Kind, Map<string, any>> = {
    account: new Map(), app: new Map(), key: new Map(), namespace: new Map(), token: new Map(),
  }
  private listeners = new Set<(e: ControlEvent) => void>()
  private upsert

  constructor(private readonly db: Database) {
    for (const row of db.query('SELECT kind, id, body FROM records').all() as { kind: Kind; id: string; body: string }[]) {
      this.maps[row.kind]?.set(row.id, JSON.parse(row.body))
    }
    this.upsert = db.prepare('INSERT OR REPLACE INTO records (kind, id, parent, body) VALUES (?, ?, ?, ?)')
  }

  private put(kind: Kind, id: string, parent: string, value: object, event: ControlEvent) {
    this.upsert.run(kind, id, parent, JSON.stringify(value))
    this.maps[kind].set(id, value)
    for (const l of this.listeners) l(event)
  }

  private list<T>(kind: Kind, pred: (v: T) => boolean): T[] {
    return [...this.maps[kind].values()].filter(pred)
  }

  async listAccounts() { return this.list<Account>('account', () => true) }
  async getAccount(id: string) { return this.maps.account.get(id) as Account | undefined }
  async createAccount(a: Account) { this.put('account', a.id, '', a, { kind: 'account' }) }
  async getApp(id: string) { return this.maps.app.get(id) as App | undefined }
  async listApps(accountId: string) { return this.list<App>('app', (a) => a.accountId === accountId) }
  async createApp(a: App) { this.put('app', a.id, a.accountId, a, { kind: 'app', appId: a.id }) }
  async getKey(keyName: string) { return this.maps.key.get(keyName) as ApiKey | undefined }
  async listKeys(appId: string) { return this.list<ApiKey>('key', (k) => k.appId === appId) }
  async createKey(k: ApiKey) { this.put('key', `${k.appId}.${k.id}`, k.appId, k, { kind: 'key', appId: k.appId }) }
  async listNamespaces(appId: string) { return this.list<Namespace>('namespace', (n) => n.appId === appId) }
  async putNamespace(n: Namespace) { this.put('namespace', `${n.appId}:${n.id}`, n.appId, n, { kind: 'namespace', appId: n.appId }) }
  async getAccessTokenByHash(hash: string) { return this.list<AccessToken>('token', (t) => t.hash === hash)[0] }
  async createAccessToken(t: AccessToken) { this.put('token', t.id, t.accountId, t, { kind: 'account' }) }

  onChange(listener: (e: ControlEvent) => void) {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  async ready() { return true }
  async close() {}
}
