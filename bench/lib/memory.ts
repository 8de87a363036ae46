import { readFileSync } from 'node:fs'

/** Resident memory (VmRSS) of process `pid` in bytes, from /proc; undefined off Linux. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))
    return m ? Number(m[1]) * 1024 : undefined
  } catch {
    return undefined
  }
}
