import type { ActiveChannelStore } from '../../core/ports'
import { withTimeout } from './errors'
import type { RedisCommander } from './clients'
import type { RedisKeys } from './keys'
import { ADD_ACTIVE_CHANNEL_SCRIPT } from './lua/active-channels'
import { ScriptRunner } from './script-runner'

/**
 * The channels active on each account, shared by all nodes: one sorted set per account (one slot
 * on a cluster), member -> when a node last named it; a stale member stops counting and the set
 * expires when no node names anything in it any more.
 */
export class RedisActiveChannelStore implements ActiveChannelStore {
  private readonly addScript: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
    private readonly onError: (e: unknown) => void,
  ) {
    this.addScript = new ScriptRunner(cmd, ADD_ACTIVE_CHANNEL_SCRIPT)
  }

  async has(accountId: string, member: string, now: number, staleMs: number): Promise<boolean> {
    const at = await withTimeout(
      this.cmd.sendCommand<string | null>(['ZSCORE', this.keys.activeChannels(accountId), member]),
      this.timeoutMs,
    )
    return at !== null && at !== undefined && Number(at) > now - staleMs
  }

  async add(
    accountId: string,
    member: string,
    now: number,
    max: number,
    staleMs: number,
  ): Promise<'known' | 'added' | 'full'> {
    const args = [member, String(now), String(max), String(staleMs)]
    const r = await withTimeout(this.addScript.run<string>([this.keys.activeChannels(accountId)], args), this.timeoutMs)
    return r === 'known' || r === 'added' ? r : 'full'
  }

  async touch(accountId: string, members: string[], now: number, staleMs: number): Promise<void> {
    if (!members.length) return
    const key = this.keys.activeChannels(accountId)
    const scored = members.flatMap((m) => [String(now), m])
    await withTimeout(
      Promise.all([
        this.cmd.sendCommand(['ZADD', key, 'GT', ...scored]),
        this.cmd.sendCommand(['PEXPIRE', key, String(staleMs * 2)]),
      ]),
      this.timeoutMs,
    ).catch(this.onError)
  }
}
