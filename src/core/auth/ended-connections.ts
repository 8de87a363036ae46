import type { NonceStore } from '../ports'

/** How long an ended connection is remembered as ended (ms): its recovery keys are refused for this long. */
export const ENDED_CONNECTION_MEMORY_MS = 24 * 3600_000

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
 */
export class EndedConnections {
  constructor(private readonly seen: NonceStore) {}

  /** Records that the client closed the connection. */
  async closed(connectionId: string): Promise<void> {
    await this.seen.claim(closedKey(connectionId), ENDED_CONNECTION_MEMORY_MS)
  }

  /** Records that a key's connection state expired where it was issued. */
  async expired(connectionKey: string): Promise<void> {
    await this.seen.claim(expiredKey(connectionKey), ENDED_CONNECTION_MEMORY_MS)
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
