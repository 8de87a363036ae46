import { allocatorRestartEnv } from '../../src/config/allocator'

/**
 * Begins this bench again in its process (execve) with the gateway's allocator settings, as
 * src/main.ts begins itself (MEMORY_PURGE_DELAY_MS: freed memory kept), unless it runs with them
 * already. With Bun's defaults an in-process bench pays page faults the gateway does not: in
 * `publish-route-cost` they were a quarter of the samples (`clear_page_erms` and the guest's
 * interrupt enabling under them, 2026-11-30), which dilutes the code's own difference.
 */
export function beginWithGatewayAllocator(): void {
  const restart = allocatorRestartEnv()
  if (restart && process.execve)
    process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], restart)
}
