import type { RedisClient } from './connection'

type Options = Parameters<RedisClient['sendCommand']>[1]

/** Runs a Lua script by its SHA, loading it once (and again after a Redis restart: NOSCRIPT). */
export class ScriptRunner {
  private sha?: string
  constructor(private readonly cmd: RedisClient, private readonly source: string) {}

  async run(keys: string[], args: Array<string | Buffer>, options?: Options) {
    if (this.sha) {
      try {
        return await this.cmd.sendCommand(['EVALSHA', this.sha, String(keys.length), ...keys, ...args], options)
      } catch (e) {
        if (!String((e as Error).message).includes('NOSCRIPT')) throw e
      }
    }
    this.sha = String(await this.cmd.sendCommand(['SCRIPT', 'LOAD', this.source]))
    return this.cmd.sendCommand(['EVALSHA', this.sha, String(keys.length), ...keys, ...args], options)
  }
}
