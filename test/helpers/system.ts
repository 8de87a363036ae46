import { existsSync } from 'node:fs'

/**
 * Tests that need a system component skip with a clear message on a developer machine without
 * it, but fail under CI (`CI=true`), where .ci/run installs it.
 */
export function requireSystem(path: string, what: string): boolean {
  if (existsSync(path)) return true
  if (process.env.CI === 'true')
    throw new Error(`${what} (${path}) is required in CI but missing: .ci/run should have installed it`)
  console.warn(`skipping: ${what} not found at ${path} (apt-get install it to run these tests)`)
  return false
}
