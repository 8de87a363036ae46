import type { MarkStore } from '../ports'

/** How long an ended connection is remembered as ended (ms): its recovery keys are refused for this long. */
export const ENDED_CONNECTION_MEMORY_MS = 24 * 3600_000

export interface EndedConnectionSettings {
  /** Marks one app's connections may leave (ended connections, re-authorised identities); oldest forgotten first. */
  connectionMarksPerApp: number
}

const closedKey = (connectionId: string) => `connection-closed:${connectionId}`
const expiredKey = (connectionKey: string) => `connection-expired:${connectionKey}`

/**
 * Realtime connections whose state is gone, shared by all nodes: a resume or recover of one of
 * them is refused (80008) and gets a new connection.
 *
 * - Closed by its client (CLOSE): the connection id is over.
 * - Dropped and not resumed on the node that served it within the state TTL: the key that node
 *   issued is over. The connection may have resumed on another node meanwhile: that node issued
 *   it a newer key, which stays good.
 *
 * A node that dies without a word records nothing, so its clients still resume elsewhere.
 *
 * The records are marks (MarkStore), apart from token-request nonces, and bounded per app: past
 * the bound the app's oldest are forgotten. A forgotten record lets a resume of that ended
 * connection through as if its state had merely expired on this node: it gets its old id back
 * with nothing to hand over (no presence, no pending messages; channels re-attach from where the
 * client says it was). Only a client holding that connection's key, issued for its own app and
 * identity, can ask for it, so an app crowds out only its own records. A record made without the
 * app counts only towards the store's whole bound.
 */
export class EndedConnections {
  constructor(
    private readonly seen: MarkStore,
    private readonly maxPerApp: number,
  ) {}

  /** Records that the client closed the connection (of app `appId`). */
  async closed(connectionId: string, appId?: string): Promise<void> {
    await this.seen.add(appId, closedKey(connectionId), ENDED_CONNECTION_MEMORY_MS, this.maxPerApp)
  }

  /** Records that a key's connection state expired where it was issued (for app `appId`). */
  async expired(connectionKey: string, appId?: string): Promise<void> {
    await this.seen.add(appId, expiredKey(connectionKey), ENDED_CONNECTION_MEMORY_MS, this.maxPerApp)
  }

  /** Whether a resume with this key (of this connection) finds the connection over. */
  async ended(connectionId: string, connectionKey: string): Promise<boolean> {
    const [closed, expired] = await Promise.all([
      this.seen.has(closedKey(connectionId)),
      this.seen.has(expiredKey(connectionKey)),
    ])
    return closed || expired
  }
}
