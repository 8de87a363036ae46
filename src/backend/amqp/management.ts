/**
 * The RabbitMQ management HTTP API (plugin `rabbitmq_management`): users and permissions can be
 * made only there (or with rabbitmqctl), and it reports a queue's message counts.
 */
export class RabbitManagement {
  private readonly base: string
  private readonly authorization: string

  constructor(url: string) {
    const u = new URL(url)
    this.authorization =
      'Basic ' + Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')
    u.username = ''
    u.password = ''
    this.base = u.toString().replace(/\/+$/, '') + '/api'
  }

  private async call(method: string, path: string, body?: unknown): Promise<Response> {
    const r = await fetch(this.base + path, {
      method,
      headers: { authorization: this.authorization, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(5000),
    })
    if (!r.ok && r.status !== 404)
      throw new Error(`RabbitMQ management API: ${method} ${path.split('/')[1]} answered ${r.status}`)
    return r
  }

  /** Creates the user or sets its password; no tags (no management access). */
  async putUser(name: string, password: string): Promise<void> {
    await this.call('PUT', `/users/${encodeURIComponent(name)}`, { password, tags: '' })
  }

  async deleteUser(name: string): Promise<void> {
    await this.call('DELETE', `/users/${encodeURIComponent(name)}`)
  }

  /** The user's permissions in the vhost: regular expressions on resource names. */
  async setPermissions(
    vhost: string,
    user: string,
    p: { configure: string; write: string; read: string },
  ): Promise<void> {
    await this.call('PUT', `/permissions/${encodeURIComponent(vhost)}/${encodeURIComponent(user)}`, p)
  }

  /** The queue's counts as last sampled by the broker; undefined when it has no such queue. */
  async queue(
    vhost: string,
    name: string,
  ): Promise<{ ready: number; unacknowledged: number; total: number } | undefined> {
    const r = await this.call('GET', `/queues/${encodeURIComponent(vhost)}/${encodeURIComponent(name)}`)
    if (r.status === 404) return undefined
    const q = (await r.json()) as Record<string, unknown>
    const n = (v: unknown) => (typeof v === 'number' ? v : 0)
    return { ready: n(q.messages_ready), unacknowledged: n(q.messages_unacknowledged), total: n(q.messages) }
  }
}
