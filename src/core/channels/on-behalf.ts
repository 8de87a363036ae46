import { GatewayError } from '../../errors'
import type { ConnectionKeys } from '../auth/connection-keys'
import type { EndedConnections } from '../auth/ended-connections'
import type { PresenceStore } from '../ports'

const keyOf = (m: unknown): unknown =>
  typeof m === 'object' && m !== null ? (m as Record<string, unknown>).connectionKey : undefined

const hasKey = (m: unknown): boolean => {
  const key = keyOf(m)
  return key !== undefined && key !== null
}

/** Whether a publish body names a connection it is published on behalf of (a message's `connectionKey`). */
export function carriesConnectionKey(body: unknown): boolean {
  return Array.isArray(body) ? body.some(hasKey) : hasKey(body)
}

/**
 * REST publishes on behalf of a realtime connection: a message carrying the private
 * `connectionKey` of a connection is published with that connection's `connectionId` (so, for
 * one, a connection with `echo=false` does not receive it), as the hosted service does. The key
 * must be one a server issued to a connection of the publisher's app, and the connection must not
 * be over: closed by its client, or dropped and past its state TTL on the node that served it
 * (the records every node shares; a connection still resumable counts as live), or on a node that
 * died (killed: it recorded nothing) as the node leases tell, unless the connection resumed on a
 * live node since. Otherwise the publish is refused whole with 40006. The key itself is never stored.
 */
export class OnBehalf {
  constructor(
    private readonly keys: ConnectionKeys,
    private readonly ended: EndedConnections,
    private readonly leases: Pick<PresenceStore, 'onLiveNode'>,
  ) {}

  /** The connection id of each message of `body` (undefined for those without a key), in order. */
  async resolve(appId: string, body: unknown): Promise<Array<string | undefined>> {
    const messages = Array.isArray(body) ? body : [body]
    const found = new Map<string, Promise<string>>()
    return Promise.all(
      messages.map((m) => {
        const key = keyOf(m)
        if (key === undefined || key === null) return undefined
        if (typeof key !== 'string') throw refused('must be a string')
        let id = found.get(key)
        if (!id) found.set(key, (id = this.live(appId, key)))
        return id
      }),
    )
  }

  private async live(appId: string, key: string): Promise<string> {
    const issued = await this.keys.ofApp(key, appId)
    if (issued === undefined) throw refused('not a connection of this app')
    const { id, node } = issued
    const [ended, live] = await Promise.all([this.ended.ended(id, key), this.leases.onLiveNode(node, id)])
    if (ended || !live) throw refused('the connection is closed or expired')
    return id
  }
}

const refused = (why: string) => new GatewayError(40006, `Invalid connectionKey: ${why}`)
