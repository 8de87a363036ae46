/** The Redis Cluster settings: what loadConfig accepts and refuses. */
import { expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'

test('REDIS_CLUSTER takes comma-separated seed nodes; several nodes without it are refused', () => {
  const c = loadConfig({ REDIS_URL: 'redis://10.0.0.1:6379,redis://10.0.0.2:6379', REDIS_CLUSTER: 'true' })
  expect(c.redisCluster).toBe(true)
  expect(c.redisWaitReplicas).toBe(0)
  expect(() => loadConfig({ REDIS_URL: 'redis://10.0.0.1:6379,redis://10.0.0.2:6379' })).toThrow(
    /REDIS_URL names several nodes: set REDIS_CLUSTER=true/,
  )
  expect(loadConfig({ REDIS_URL: 'redis://10.0.0.1:6379' }).redisCluster).toBe(false)
})

test('a REDIS_PREFIX holding a brace is refused (it would change the hash tags); REDIS_WAIT_REPLICAS is bounded', () => {
  expect(() => loadConfig({ REDIS_PREFIX: 'gw{1}:' })).toThrow(/REDIS_PREFIX must not contain \{ or \}/)
  expect(loadConfig({ REDIS_WAIT_REPLICAS: '2' }).redisWaitReplicas).toBe(2)
  expect(() => loadConfig({ REDIS_WAIT_REPLICAS: '-1' })).toThrow(/REDIS_WAIT_REPLICAS/)
})
