import type { NonceClaim, NonceStore } from '../../core/ports'
import { withTimeout } from './errors'
import type { RedisCommander } from './clients'
import type { RedisKeys } from './keys'
import { NONCE_CLAIM_SCRIPT } from './lua/nonces'
import { ScriptRunner } from './script-runner'

const CLAIMS: Record<number, NonceClaim> = { 0: 'seen', 1: 'claimed', 2: 'scopeFull' }

/**
 * Seen nonces shared by all nodes: a key with expiry each, and per scope a sorted set of its
 * live ones that bounds them (a full scope refuses; nothing live is dropped). The store's whole
 * size is Redis's memory: with an evicting `maxmemory-policy` Redis itself could drop a live
 * nonce, so docs/security.md asks for `noeviction`.
 */
export class RedisNonceStore implements NonceStore {
  private readonly claimScript: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
  ) {
    this.claimScript = new ScriptRunner(cmd, NONCE_CLAIM_SCRIPT)
  }

  async claim(scope: string, key: string, ttlMs: number, maxPerScope: number): Promise<NonceClaim> {
    const r = await withTimeout(
      this.claimScript.run(
        [this.keys.nonce(scope, key), this.keys.nonceIndex(scope)],
        [String(ttlMs), String(maxPerScope)],
      ),
      this.timeoutMs,
    )
    return CLAIMS[Number(r)] ?? 'storeFull'
  }

  async has(scope: string, key: string): Promise<boolean> {
    const r = await withTimeout(this.cmd.sendCommand(['EXISTS', this.keys.nonce(scope, key)]), this.timeoutMs)
    return Number(r) === 1
  }
}
