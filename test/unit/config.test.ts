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
  try { loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud', BASIC_AUTH_REQUIRES_TLS: 'maybe' }) } catch (e) { message = (e as Error).message }
  expect(message).toContain('PORT')
  expect(message).toContain('LOG_LEVEL')
  expect(message).toContain('BASIC_AUTH_REQUIRES_TLS')
})

test('the settings table lists every setting', () => {
  const table = settingsTable()
  for (const s of Object.values(SETTINGS)) expect(table).toContain(`\`${s.env}\``)
})
