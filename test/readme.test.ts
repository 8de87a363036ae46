import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { settingsTable } from '../src/config'

const readme = readFileSync(join(import.meta.dir, '..', 'README.md'), 'utf8')

test('README starts with the two fresh-machine commands', () => {
  const [first, second] = readme.split('\n')
  expect(first).toBe('npm ci && npm start')
  expect(second).toBe('npm ci && npm test')
})

test('README settings table matches the config schema', () => {
  expect(readme).toContain(settingsTable())
})
