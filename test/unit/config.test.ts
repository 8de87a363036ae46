import { expect, test } from 'bun:test'
import { SETTINGS, loadConfig, settingsTable } from '../../src/config'
import { allocatorRestartEnv } from '../../src/config/allocator'

test('defaults load without environment', () => {
  const c = loadConfig({})
  expect(c.port).toBe(8080)
  expect(c.redisUrl).toBe('')
  expect(c.maxMessageSize).toBe(65536)
})

test('every problem is reported at once', () => {
  let message = ''
  try {
    loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud', BASIC_AUTH_REQUIRES_TLS: 'maybe' })
  } catch (e) {
    message = (e as Error).message
  }
  expect(message).toContain('PORT')
  expect(message).toContain('LOG_LEVEL')
  expect(message).toContain('BASIC_AUTH_REQUIRES_TLS')
})

test('the settings table lists every setting', () => {
  const table = settingsTable()
  for (const s of Object.values(SETTINGS)) expect(table).toContain(`\`${s.env}\``)
})

test('a body timeout must be below the idle connection timeout (the runtime would cut first, without an answer)', () => {
  expect(() => loadConfig({ REQUEST_BODY_TIMEOUT_MS: '30000', IDLE_CONNECTION_TIMEOUT_MS: '30000' })).toThrow(
    'REQUEST_BODY_TIMEOUT_MS must be below IDLE_CONNECTION_TIMEOUT_MS',
  )
  expect(loadConfig({ REQUEST_BODY_TIMEOUT_MS: '60000', IDLE_CONNECTION_TIMEOUT_MS: '0' }).requestBodyTimeoutMs).toBe(
    60000,
  )
})

test('processes sharing a port are nodes of a cluster: REUSE_PORT needs REDIS_URL', () => {
  expect(() => loadConfig({ REUSE_PORT: 'true' })).toThrow('REUSE_PORT needs REDIS_URL')
  expect(loadConfig({ REUSE_PORT: 'true', REDIS_URL: 'redis://127.0.0.1:6379' }).reusePort).toBe(true)
  expect(loadConfig({}).reusePort).toBe(false)
})

test("the allocator's purge delay: a start whose environment lacks MEMORY_PURGE_DELAY_MS's value begins again with it", () => {
  // unset: the default, -1 (freed memory kept for reuse); the rest of the environment is kept
  expect(allocatorRestartEnv({ PORT: '9000' })).toEqual({ PORT: '9000', MIMALLOC_PURGE_DELAY: '-1' })
  expect(allocatorRestartEnv({ MEMORY_PURGE_DELAY_MS: '10', MIMALLOC_PURGE_DELAY: '-1' })).toEqual({
    MEMORY_PURGE_DELAY_MS: '10',
    MIMALLOC_PURGE_DELAY: '10',
  })
  // already so (the process that began again): nothing to do, so it never loops
  expect(allocatorRestartEnv({ MIMALLOC_PURGE_DELAY: '-1' })).toBeUndefined()
  expect(allocatorRestartEnv({ MEMORY_PURGE_DELAY_MS: '250', MIMALLOC_PURGE_DELAY: '250' })).toBeUndefined()
  // malformed: no new start; loadConfig refuses it with the other problems
  expect(allocatorRestartEnv({ MEMORY_PURGE_DELAY_MS: 'soon' })).toBeUndefined()
  expect(() => loadConfig({ MEMORY_PURGE_DELAY_MS: '-2' })).toThrow('MEMORY_PURGE_DELAY_MS')
})
