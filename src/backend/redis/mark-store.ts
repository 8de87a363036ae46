import type { MarkStore } from '../../core/ports'
import { withTimeout } from './errors'
import type { RedisCommander } from './clients'
import type { RedisKeys } from './keys'
import { MARK_INDEX_SCRIPT } from './lua/marks'
import { ScriptRunner } from './script-runner'

/**
 * Marks shared by all nodes: a key with expiry each, indexed per scope by a sorted set that
 * forgets the scope's oldest past its bound.
 */
export class RedisMarkStore implements MarkStore {
  private readonly indexScript: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
  ) {
    this.indexScript = new ScriptRunner(cmd, MARK_INDEX_SCRIPT)
  }

  async add(scope: string | undefined, key: string, ttlMs: number, maxPerScope: number): Promise<void> {
    const record = this.keys.mark(key)
    await withTimeout(this.cmd.sendCommand(['SET', record, '1', 'PX', String(ttlMs)]), this.timeoutMs)
    if (scope === undefined) return
    const gone = await withTimeout(
      this.indexScript.run<string[]>([this.keys.markIndex(scope)], [record, String(ttlMs), String(maxPerScope)]),
      this.timeoutMs,
    )
    await Promise.all(gone.map((k) => withTimeout(this.cmd.sendCommand(['DEL', k]), this.timeoutMs)))
  }

  async has(key: string): Promise<boolean> {
    return Number(await withTimeout(this.cmd.sendCommand(['EXISTS', this.keys.mark(key)]), this.timeoutMs)) === 1
  }
}
