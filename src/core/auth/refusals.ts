import type { GatewayError } from '../../errors'

/** Credentials longer than this are verified on every use, never remembered (they are not what clients send). */
const MAX_REMEMBERED_LENGTH = 4096

/**
 * Verdicts on refused credentials (a token expired, of a bad signature, revoked; a key unknown),
 * remembered per credential string for a bounded time and count, so a client that sends one again
 * and again (ably-js renews and retries on a token error; its REST retry loop can resend the stale
 * token without end) costs a map lookup per request, not a verification. The answer is the hosted
 * one, unchanged: the client's loop is its own. Forgotten on any control change (a key created,
 * restored or revoked), and the oldest first when full.
 */
export class Refusals {
  private readonly verdicts = new Map<string, { err: GatewayError; until: number }>()

  constructor(
    private readonly max: number,
    private readonly ttlMs: number,
  ) {}

  /** The error the credential was refused with, while remembered. */
  get(credential: string, now: number): GatewayError | undefined {
    const v = this.verdicts.get(credential)
    if (!v) return undefined
    if (v.until > now) return v.err
    this.verdicts.delete(credential)
    return undefined
  }

  remember(credential: string, err: GatewayError, now: number): void {
    if (this.max === 0 || this.ttlMs === 0 || credential.length > MAX_REMEMBERED_LENGTH) return
    if (this.verdicts.size >= this.max) this.verdicts.delete(this.verdicts.keys().next().value!)
    this.verdicts.set(credential, { err, until: now + this.ttlMs })
  }

  clear(): void {
    this.verdicts.clear()
  }
}
