import { createHash } from 'node:crypto'
import type { RedisCommander, Sender } from './clients'

type Options = Parameters<RedisCommander['sendCommand']>[1]

/**
 * Runs a Lua script by its SHA. Until Redis is known to hold the script (and again after a
 * Redis restart: NOSCRIPT) calls send the source with EVAL, which runs and caches it: every call
 * goes out when it is made, so calls and the commands around them keep their order. (Loading
 * first with SCRIPT LOAD let a later command overtake the first call, e.g. a stats read its peak write.)
 * Runs on a node-redis client, or on any sender (the publish path uses Bun's native client).
 */
export class ScriptRunner {
  private readonly sha: string
  private loaded = false
  private readonly send: (args: Array<string | Buffer>, options?: Options) => Promise<unknown>

  constructor(
    client: RedisCommander | Sender,
    private readonly source: string,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex')
    this.send =
      typeof client === 'function' ? (args) => client(args) : (args, options) => client.sendCommand(args, options)
  }

  /** Runs the script; its reply as the caller names it (`T`, as RedisCommander.sendCommand). */
  async run<T = unknown>(keys: string[], args: Array<string | Buffer>, options?: Options): Promise<T> {
    if (!this.loaded) return this.eval<T>(keys, args, options)
    try {
      return (await this.send(['EVALSHA', this.sha, String(keys.length), ...keys, ...args], options)) as T
    } catch (e) {
      if (!String((e as Error).message).includes('NOSCRIPT')) throw e
      this.loaded = false
      return this.eval<T>(keys, args, options)
    }
  }

  private async eval<T>(keys: string[], args: Array<string | Buffer>, options?: Options): Promise<T> {
    const reply = await this.send(['EVAL', this.source, String(keys.length), ...keys, ...args], options)
    this.loaded = true
    return reply as T
  }
}
