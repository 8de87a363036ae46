import { expect, test } from 'bun:test'
import { SETTINGS, loadConfig, settingsTable } from '../../src/config'

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
