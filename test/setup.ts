import { afterAll } from 'bun:test'
import { stopSharedRedis } from './helpers/redis'
import { stopSharedRedisCluster } from './helpers/redis-cluster'

// preloaded by bunfig.toml: after the last test file, the tests' own redis-server goes away
afterAll(async () => {
  await stopSharedRedis()
  await stopSharedRedisCluster()
})
