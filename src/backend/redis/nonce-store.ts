import type { NonceStore } from '../../core/ports'
import { withTimeout, type RedisClient } from './connection'
import type { RedisKeys } from './keys'

/** Seen nonces shared by all nodes: SET NX with expiry. */
export class RedisNonceStore implements NonceStore {
  constructor(
    private readonly cmd: RedisClient,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
  ) {}

  async claim(key: string, ttlMs: number): Promise<boolean> {
    const r = await withTimeout(
      this.cmd.sendCommand(['SET', this.keys.nonce(key), '1', 'NX', 'PX', String(ttlMs)]),
      this.timeoutMs,
    )
    return r !== null
  }

  async has(key: string): Promise<boolean> {
    return Number(await withTimeout(this.cmd.sendCommand(['EXISTS', this.keys.nonce(key)]), this.timeoutMs)) === 1
  }
}
