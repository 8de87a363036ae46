import { afterAll } from 'bun:test'
import { stopSharedRedis } from './helpers/redis'

// preloaded by bunfig.toml: after the last test file, the tests' own redis-server goes away
afterAll(async () => {
  await stopSharedRedis()
})
