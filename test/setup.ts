import { afterAll, setDefaultTimeout } from 'bun:test'
import { stopSharedRedis } from './helpers/redis'
import { stopSharedRedisCluster } from './helpers/redis-cluster'

// preloaded by bunfig.toml, so that `bun test <file>` gets the package scripts' per-test timeout
// (30 s) without `--timeout`: this Bun reads no timeout from bunfig. It also replaces a
// `--timeout` given (the preload cannot see it): TEST_TIMEOUT_MS sets another
setDefaultTimeout(Number(process.env.TEST_TIMEOUT_MS) || 30_000)

// preloaded by bunfig.toml: after the last test file, the tests' own redis-server goes away
afterAll(async () => {
  await stopSharedRedis()
  await stopSharedRedisCluster()
})
