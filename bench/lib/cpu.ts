import { readFileSync } from 'node:fs'

const CLK_TCK = 100 // USER_HZ: 100 on every mainstream Linux

/** CPU seconds (user + system) process `pid` has used so far, from /proc; undefined off Linux. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK // utime, stime: fields 14 and 15 of stat
  } catch {
    return undefined
  }
}
