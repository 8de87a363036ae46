import { readdirSync, readFileSync } from 'node:fs'

const CLK_TCK = 100 // USER_HZ: 100 on every mainstream Linux

/** CPU seconds (user + system) process `pid` has used so far, from /proc; undefined off Linux. */
export const cpuSeconds = (pid: number): number | undefined => statCpuSeconds(`/proc/${pid}/stat`)

/** A /proc `stat` file's fields after the command name (field 3 onwards); throws when unreadable. */
function statFields(path: string): string[] {
  const stat = readFileSync(path, 'latin1')
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
}

/** User + system ticks of a /proc `stat` file's fields: utime and stime, fields 14 and 15 of stat. */
const ticksOf = (fields: string[]) => Number(fields[11]) + Number(fields[12])

/** User + system seconds of a /proc `stat` file (a process's or one thread's); undefined when unreadable. */
function statCpuSeconds(path: string): number | undefined {
  try {
    return ticksOf(statFields(path)) / CLK_TCK
  } catch {
    return undefined
  }
}

/** Minor page faults process `pid` has taken so far (all its threads), from /proc. */
export const minorFaults = (pid: number): number => Number(statFields(`/proc/${pid}/stat`)[7])

/** CPU seconds of each thread of `pid` by thread name (threads of one name summed), from /proc. */
export function secondsByThreadName(pid: number): Map<string, number> {
  const out = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'latin1').trim()
      out.set(name, (out.get(name) ?? 0) + ticksOf(statFields(`/proc/${pid}/task/${tid}/stat`)) / CLK_TCK)
    } catch {
      // the thread ended meanwhile
    }
  }
  return out
}

/**
 * CPU seconds of process `pid` split by thread: its main thread (the event loop and the JavaScript
 * on it) and its other threads together (the garbage collector's helpers, the JIT, the
 * allocator's scavenger...), from /proc; undefined off Linux. Threads that ended are not counted.
 */
export function threadCpuSeconds(pid: number): { main: number; others: number } | undefined {
  let tids: string[]
  try {
    tids = readdirSync(`/proc/${pid}/task`)
  } catch {
    return undefined
  }
  let main = 0
  let others = 0
  for (const tid of tids) {
    const s = statCpuSeconds(`/proc/${pid}/task/${tid}/stat`) ?? 0
    if (tid === String(pid)) main += s
    else others += s
  }
  return { main, others }
}
