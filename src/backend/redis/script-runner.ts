import type { RedisClient } from './connection'

type Options = Parameters<RedisClient['sendCommand']>[1]

/** Sends one raw command (`[name, ...args]`) and resolves with the reply. */
export type Sender = (args: Array<string | Buffer>) => Promise<unknown>

/**
 * Runs a Lua script by its SHA, loading it once (and again after a Redis restart: NOSCRIPT).
 * Runs on a node-redis client, or on any sender (the publish path uses Bun's native client).
 * Calls made while the script loads wait for that one load and go out in the order they were
 * made, so a later call never overtakes an earlier one.
 */
export class ScriptRunner {
  private sha?: string
  private loading?: Promise<unknown>
  private readonly send: (args: Array<string | Buffer>, options?: Options) => Promise<unknown>

  constructor(client: RedisClient | Sender, private readonly source: string) {
    this.send = typeof client === 'function' ? (args) => client(args) : (args, options) => client.sendCommand(args, options)
  }

  async run(keys: string[], args: Array<string | Buffer>, options?: Options) {
    if (!this.sha) await this.load()
    try {
      return await this.send(['EVALSHA', this.sha!, String(keys.length), ...keys, ...args], options)
    } catch (e) {
      if (!String((e as Error).message).includes('NOSCRIPT')) throw e
      this.sha = undefined
      await this.load()
      return this.send(['EVALSHA', this.sha!, String(keys.length), ...keys, ...args], options)
    }
  }

  private load() {
    this.loading ??= this.send(['SCRIPT', 'LOAD', this.source])
      .then((sha) => { this.sha = String(sha) })
      .finally(() => { this.loading = undefined })
    return this.loading
  }
}
