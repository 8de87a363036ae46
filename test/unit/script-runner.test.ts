import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connectRedis, type RedisClient } from '../../src/backend/redis/clients'
import { ScriptRunner } from '../../src/backend/redis/script-runner'
import { sharedRedis } from '../helpers/redis'

let client: RedisClient
beforeAll(async () => {
  client = await connectRedis({ redisUrl: (await sharedRedis()).url, redisTimeoutMs: 2000 }, () => {})
})
afterAll(async () => {
  await client.quit()
})

test('calls made while the script loads run in the order they were made, never overtaken by later ones', async () => {
  const key = `script-order:${Date.now()}`
  // a real Redis whose replies to loading the script (SCRIPT LOAD, EVAL) are held until released: a slow first load
  const held: Array<() => void> = []
  const send = async (args: Array<string | Buffer>) => {
    const reply = await client.sendCommand(args)
    if (args[0] === 'SCRIPT' || args[0] === 'EVAL') await new Promise<void>((r) => held.push(r))
    return reply
  }
  const runner = new ScriptRunner(send, `return redis.call('RPUSH', KEYS[1], ARGV[1])`)
  const calls = [runner.run([key], ['0']), runner.run([key], ['1'])]
  while (held.length < 2) await Bun.sleep(1)
  held.shift()!()
  await Bun.sleep(5) // the first load is done: a call made now finds the script loaded
  calls.push(runner.run([key], ['2']))
  while (held.length) held.shift()!()
  await Promise.all(calls)
  expect((await client.sendCommand(['LRANGE', key, '0', '-1'])) as unknown).toEqual(['0', '1', '2'])
  expect((await client.sendCommand(['DEL', key])) as unknown).toBe(1)
})

test('after a Redis script flush the script is loaded again', async () => {
  const runner = new ScriptRunner(client, `return ARGV[1]`)
  expect(await runner.run([], ['a'])).toBe('a')
  await client.sendCommand(['SCRIPT', 'FLUSH'])
  expect(await runner.run([], ['b'])).toBe('b')
})

test('a command sent right after the first call of a script sees its write (the call is not held back by loading)', async () => {
  const key = `script-write:${Date.now()}`
  const runner = new ScriptRunner(client, `return redis.call('HSET', KEYS[1], 'peak', ARGV[1])`)
  const write = runner.run([key], ['3'])
  const read = client.sendCommand(['HGET', key, 'peak'])
  expect((await read) as unknown).toBe('3')
  await write
  expect((await client.sendCommand(['DEL', key])) as unknown).toBe(1)
})
