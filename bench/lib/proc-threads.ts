import { readdirSync, readFileSync } from 'node:fs'

/** /proc/<pid>/stat's fields after the command name (field 3 onwards). */
function statFields(path: string): string[] {
  const stat = readFileSync(path, 'latin1')
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
}

/** CPU ticks (user + system, 1/100 s) of each thread of `pid` by thread name, summed over threads of one name. */
export function ticksByThreadName(pid: number): Map<string, number> {
  const out = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'latin1').trim()
      const f = statFields(`/proc/${pid}/task/${tid}/stat`)
      out.set(name, (out.get(name) ?? 0) + Number(f[11]) + Number(f[12]))
    } catch {
      // the thread ended meanwhile
    }
  }
  return out
}

/** Minor page faults process `pid` has taken so far (all its threads). */
export const minorFaults = (pid: number): number => Number(statFields(`/proc/${pid}/stat`)[7])

/** Resident set size of `pid`, MiB. */
export const rssMiB = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1] ?? NaN) / 1024
