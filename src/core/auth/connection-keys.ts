import { hmacSha256, randomId, safeEqual } from '../../lib/crypto'
import type { Clock, ControlStore, MarkStore } from '../ports'
import { ENDED_CONNECTION_MEMORY_MS } from './ended-connections'

/**
 * Realtime connection identities. A connection key is `<connectionId>!<stamp>.<node>.<who>.<mac>`:
 *
 * - `stamp`: when the key was issued (ms, base 36; every CONNECTED of a connection may bring a new key);
 * - `node`: the node that issued it (PresenceStore.node), so any node can tell from the leases
 *   whether it died (a connection of a dead node is over for a publish on its behalf);
 * - `who`: a digest of the identity the connection was opened as (API key name and clientId);
 * - `mac`: an HMAC of all of it and the app id under the servers' own secret (ControlStore.secret),
 *   so only a server can mint one, any node can verify one without per-connection state, and a
 *   key resumes only for the app and identity it was issued to.
 *
 * A connection re-authorised (AUTH) as another identity of its app (a token of another key, or a
 * clientId it had not) keeps the key it was given first (the official client does); the identity
 * it was granted is recorded, and a resume as that identity is let through too.
 */
export const newConnectionId = (): string => randomId(12)

/** Who may resume a connection: the app, the API key and the clientId it was opened with. */
export interface ConnectionIdentity {
  appId: string
  keyName: string
  clientId?: string
}

const whoOf = (i: ConnectionIdentity) =>
  hmacSha256('connection-identity', `${i.keyName}\u0000${i.clientId ?? ''}`, 'base64url').slice(0, 16)

const KEY = /^([A-Za-z0-9_-]{1,64})!([0-9a-z]{1,12})\.([A-Za-z0-9_-]{1,32})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})$/

/**
 * The node that issued `key`, when it is well formed (not verified: a hint of where the connection
 * lives, never a grant). A comet request naming a connection another process of this node holds
 * is handed to that process by it.
 */
export function issuingNodeOf(key: string): string | undefined {
  return KEY.exec(key)?.[3]
}

const grantKey = (connectionId: string, who: string) => `connection-granted:${connectionId}:${who}`

/** Issues and verifies connection keys (see above). */
export class ConnectionKeys {
  private secretOnce?: Promise<string>

  constructor(
    private readonly control: Pick<ControlStore, 'secret'>,
    /** Identities connections were re-authorised as, shared by all nodes. */
    private readonly grants: MarkStore,
    private readonly clock: Clock,
    /** Grants one app may have recorded (the oldest are forgotten first: a resume as that identity then gets a new connection). */
    private readonly maxGrantsPerApp: number,
    /** This node, named in the keys it issues. */
    readonly node: string,
  ) {}

  /** The servers' secret, read once (again after a failed read). */
  private secret(): Promise<string> {
    this.secretOnce ??= this.control.secret().catch((e) => {
      this.secretOnce = undefined
      throw e
    })
    return this.secretOnce
  }

  private static mac(secret: string, id: string, stamp: string, node: string, appId: string, who: string): string {
    return hmacSha256(secret, `connection:${id}:${stamp}:${node}:${appId}:${who}`, 'base64url').slice(0, 22)
  }

  /** A key of connection `connectionId` for `identity`. */
  async issue(connectionId: string, identity: ConnectionIdentity, issuedAt = this.clock.now()): Promise<string> {
    const stamp = issuedAt.toString(36)
    const who = whoOf(identity)
    const mac = ConnectionKeys.mac(await this.secret(), connectionId, stamp, this.node, identity.appId, who)
    return `${connectionId}!${stamp}.${this.node}.${who}.${mac}`
  }

  /**
   * The id of the connection `key` names, when a server issued it for `identity` (same app, API
   * key and clientId) or for another identity of the app that the connection was later granted
   * `identity` (AUTH); undefined otherwise.
   */
  async verify(key: string, identity: ConnectionIdentity): Promise<string | undefined> {
    const issued = await this.issuedIn(key, identity.appId)
    if (!issued) return undefined
    const asked = whoOf(identity)
    if (issued.who === asked) return issued.id
    return (await this.grants.has(grantKey(issued.id, asked))) ? issued.id : undefined
  }

  /**
   * The connection `key` names (its id, and the node that issued the key) when a server issued it
   * for a connection of app `appId` (whatever its identity there); undefined otherwise. A REST
   * publish on behalf of a realtime connection names it so (a message's `connectionKey`).
   */
  async ofApp(key: string, appId: string): Promise<{ id: string; node: string } | undefined> {
    return this.issuedIn(key, appId)
  }

  /** The connection id, issuing node and identity digest of `key` when a server issued it in app `appId`. */
  private async issuedIn(key: string, appId: string): Promise<{ id: string; node: string; who: string } | undefined> {
    const m = KEY.exec(key)
    if (!m) return undefined
    const [, id, stamp, node, who, mac] = m as unknown as [string, string, string, string, string, string]
    const expected = ConnectionKeys.mac(await this.secret(), id, stamp, node, appId, who)
    return safeEqual(mac, expected) ? { id, node, who } : undefined
  }

  /** Whether `a` and `b` are one identity (a key issued for one resumes for the other). */
  static same(a: ConnectionIdentity, b: ConnectionIdentity): boolean {
    return a.keyName === b.keyName && (a.clientId ?? '') === (b.clientId ?? '')
  }

  /** Records that connection `connectionId` was re-authorised as `identity`: its keys resume as it too. */
  async grant(connectionId: string, identity: ConnectionIdentity): Promise<void> {
    await this.grants.add(
      identity.appId,
      grantKey(connectionId, whoOf(identity)),
      ENDED_CONNECTION_MEMORY_MS,
      this.maxGrantsPerApp,
    )
  }
}
