/**
 * A node that hears of control changes reads each record back from Redis; on a cluster each kind
 * of record lives on a shard of its own, and a read from a slower shard must not let a later
 * change be applied (and heard) before an earlier one. A commander whose replies come back out
 * of order stands in for two shards here; test/cluster/control-order.test.ts runs it for real.
 */
import { expect, test } from 'bun:test'
import type { RedisCommander, RedisSubscriber } from '../../src/backend/redis/clients'
import { RedisControlStore } from '../../src/backend/redis/control-store'
import { RedisKeys } from '../../src/backend/redis/keys'
import type { ControlEvent } from '../../src/core/ports'

test('changes are applied in the order announced, whichever read answers first', async () => {
  const keys = new RedisKeys('t:')
  const slow = keys.control('app')
  const cmd: RedisCommander = {
    async sendCommand<T>(args: Array<string | Buffer>) {
      const [name, key, id] = args.map(String)
      if (name === 'EXISTS') return 0 as T
      if (name === 'HGETALL') return [] as T
      if (name === 'HGET') {
        // the app's shard answers last
        if (key === slow) await Bun.sleep(30)
        return JSON.stringify({ id }) as T
      }
      throw new Error(`unexpected ${name}`)
    },
  }
  let announce: (msg: string) => void = () => {}
  const sub = {
    subscribe: async (_channel: string, listener: (msg: string) => void) => {
      announce = listener
    },
  } as unknown as RedisSubscriber
  const store = await RedisControlStore.open(cmd, sub, keys, 1000)
  const heard: string[] = []
  store.onChange((e: ControlEvent) => heard.push(`${e.kind} ${e.appId}`))
  const change = (kind: string, id: string, appId: string) => announce(JSON.stringify({ kind, id, e: { kind, appId } }))
  change('app', 'a1', 'a1')
  change('key', 'a1.k', 'a1')
  change('app', 'a2', 'a2')
  change('key', 'a2.k', 'a2')
  for (let i = 0; i < 100 && heard.length < 4; i++) await Bun.sleep(10)
  expect(heard).toEqual(['app a1', 'key a1', 'app a2', 'key a2'])
  expect(await store.getKey('a2.k')).toEqual({ id: 'a2.k' } as never)
})
