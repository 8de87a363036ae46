import type { Principal } from '../auth/principal'
import type { GatewayError } from '../../errors'
import type { Logger } from '../../lib/logger'
import type { AckQueue } from './acks'
import type { AttachmentHost } from './attachment'
import type { RealtimeSettings } from './settings'
import type { LiveOnlyKeeper } from './live-only-keeper'

/**
 * What the connection's collaborators (the operations of operations.ts and their handlers, the
 * channel operations, presence, the LiveObjects sync) need of their connection: the one host
 * interface besides the attachment's own (an attachment needs only its deliveries' few members).
 */
export interface ConnectionHost extends AttachmentHost {
  readonly s: RealtimeSettings
  readonly principalOf: Principal
  /** The `appendRollupWindow` transport param (ms), handed to every subscription. */
  readonly appendRollupWindowMs?: number
  readonly acks: AckQueue
  /** Lifecycle at debug, refusals at info; never a key, token or connection key. */
  readonly log: Logger
  /** Sends a protocol message of the server's own accord (SYNC pages): false when the client is behind. */
  push(pm: object): boolean
  /** Resolves once the socket holds no more than its unsent-bytes budget (at once when closed). */
  room(): Promise<void>
  /** Fails the connection (a connection-level ERROR, then the socket closes). */
  fail(err: GatewayError): void
  /** The channel's operations still under way (an ATTACH first of all), if any: a publish waits for them. */
  pendingAttach(channel: string): Promise<void> | undefined
  /** The modes granted to the channel's attachment; undefined when not attached. */
  attachedModes(channel: string): number | undefined
  /**
   * Runs `op` in order with the channel's ATTACH, DETACH and SYNC (after the earlier ones; later
   * ones wait for it). `op` settles its own failures: it never rejects.
   */
  inOrder(channel: string, op: () => Promise<void>): void
  /** The keeper its dropped transport left of the channel's live-only entries (a resume), taken once. */
  takeKeeper(channel: string): LiveOnlyKeeper | undefined
}
