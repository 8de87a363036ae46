import { readdirSync, readFileSync } from 'node:fs'

const CLK_TCK = 100 // USER_HZ: 100 on every mainstream Linux

/** CPU seconds (user + system) process `pid` has used so far, from /proc; undefined off Linux. */
export const cpuSeconds = (pid: number): number | undefined => statCpuSeconds(`/proc/${pid}/stat`)

/** User + system seconds of a /proc `stat` file (a process's or one thread's); undefined when unreadable. */
function statCpuSeconds(path: string): number | undefined {
  try {
    const stat = readFileSync(path, 'latin1')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK // utime, stime: fields 14 and 15 of stat
  } catch {
    return undefined
  }
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
