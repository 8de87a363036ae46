import { definedVariables } from '.'
import { SETTINGS } from './schema'

/** The variable Bun's allocator (mimalloc) reads its purge delay from, once, as the process starts. */
const PURGE_DELAY = 'MIMALLOC_PURGE_DELAY'

/**
 * The environment to start this process again with so that its allocator keeps freed memory as
 * MEMORY_PURGE_DELAY_MS says, or undefined when it runs with that value already. A malformed
 * MEMORY_PURGE_DELAY_MS also gives undefined: loadConfig refuses it with the other settings.
 */
export function allocatorRestartEnv(
  env: Record<string, string | undefined> = process.env,
): Record<string, string> | undefined {
  const s = SETTINGS.memoryPurgeDelayMs
  let ms: number
  try {
    ms = s.parse(env[s.env] ?? s.default)
  } catch {
    return undefined
  }
  if (env[PURGE_DELAY] === String(ms)) return undefined
  return { ...definedVariables(env), [PURGE_DELAY]: String(ms) }
}
