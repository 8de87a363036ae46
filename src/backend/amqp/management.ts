/**
 * The RabbitMQ management HTTP API (plugin `rabbitmq_management`): users and permissions can be
 * made only there (or with rabbitmqctl), and it reports a queue's message counts.
 */
export class RabbitManagement {
  private readonly base: string
  private readonly authorization: string
  /** The API's user (the one that makes users, vhosts and permissions). */
  readonly user: string

  constructor(url: string) {
    const u = new URL(url)
    this.user = decodeURIComponent(u.username)
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

  async userExists(name: string): Promise<boolean> {
    const r = await this.call('GET', `/users/${encodeURIComponent(name)}`)
    await r.arrayBuffer()
    return r.status !== 404
  }

  async deleteUser(name: string): Promise<void> {
    await this.call('DELETE', `/users/${encodeURIComponent(name)}`)
  }

  /** Creates the vhost (nothing if it exists); the API's user is given every permission in a vhost it creates. */
  async putVhost(name: string): Promise<void> {
    await this.call('PUT', `/vhosts/${encodeURIComponent(name)}`, {})
  }

  /** Deletes the vhost with its queues and permissions, closing its connections (nothing if it is gone). */
  async deleteVhost(name: string): Promise<void> {
    await this.call('DELETE', `/vhosts/${encodeURIComponent(name)}`)
  }

  /** The permissions held in the vhost (none when there is no such vhost). */
  async vhostPermissions(
    vhost: string,
  ): Promise<Array<{ user: string; configure: string; write: string; read: string }>> {
    const r = await this.call('GET', `/vhosts/${encodeURIComponent(vhost)}/permissions`)
    return r.status === 404
      ? []
      : ((await r.json()) as Array<{ user: string; configure: string; write: string; read: string }>)
  }

  /** Names of the vhost's queues (none when there is no such vhost). */
  async queueNames(vhost: string): Promise<string[]> {
    const r = await this.call('GET', `/queues/${encodeURIComponent(vhost)}?columns=name`)
    return r.status === 404 ? [] : ((await r.json()) as Array<{ name: string }>).map((q) => q.name)
  }

  async deletePermissions(vhost: string, user: string): Promise<void> {
    await this.call('DELETE', `/permissions/${encodeURIComponent(vhost)}/${encodeURIComponent(user)}`)
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
