/**
 * Open-file limits of benchmark processes. Every TCP connection is one file descriptor on each
 * side, so tens of thousands of event streams need a limit above the usual 1024 or 20,000. Raising
 * the hard limit needs CAP_SYS_RESOURCE (root on a normal machine; often missing in containers):
 * when the raise fails the process runs with what it inherited and `fdLimit(pid)` tells.
 */
import { readdirSync, readFileSync } from 'node:fs'

/**
 * `cmd` run through `sh`, which raises the open-file limit to at least `n` (soft and hard; if the
 * hard limit cannot be raised, the soft one to the hard one) and then execs it (same pid).
 */
export function withFdLimit(cmd: string[], n: number): string[] {
  const script =
    '[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge "$0" ] || ulimit -n "$0" 2>/dev/null || ulimit -Sn "$(ulimit -Hn)" 2>/dev/null; exec "$@"'
  return ['sh', '-c', script, String(n), ...cmd]
}

/** Soft open-file limit of process `pid` (from /proc; undefined off Linux). */
export function fdLimit(pid: number | 'self'): number | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/limits`, 'latin1')
      .split('\n')
      .find((l) => l.startsWith('Max open files'))
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0]
    return soft === 'unlimited' ? Number.MAX_SAFE_INTEGER : soft ? Number(soft) : undefined
  } catch {
    return undefined
  }
}

/** File descriptors process `pid` has open now. */
export function openFds(pid: number): number | undefined {
  try {
    return readdirSync(`/proc/${pid}/fd`).length
  } catch {
    return undefined
  }
}
