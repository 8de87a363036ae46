/**
 * What bounded a figure on the machine it ran on, from the CPU each of its processes used over the
 * measured window (% of one core): a process at 90% or more of a core was saturated and bounded
 * it; else the cores all busy together bounded it; else, with more runnable work than cores (load
 * average, which counts other tenants too), CPU taken by other processes did; else none of them
 * (the run waited: latency, flow control, connections × requests in flight). Figures from runs
 * bounded by others' CPU are not comparable by rate: compare their CPU per operation instead.
 */
import { availableParallelism, loadavg } from 'node:os'

const SATURATED = 90

export interface Machine {
  cores: number
  /** 1-minute load average when the window ended. */
  load: number
}

export const machineNow = (): Machine => ({ cores: availableParallelism(), load: loadavg()[0] ?? 0 })

/** `cpu`: process kind -> % of one core over the window (undefined: not measured). */
export function boundOf(cpu: Record<string, number | undefined>, m: Machine = machineNow()): string {
  const known = Object.entries(cpu).filter((e): e is [string, number] => e[1] !== undefined && Number.isFinite(e[1]))
  const saturated = known.filter(([, v]) => v >= SATURATED).map(([k, v]) => `${k} CPU (${v.toFixed(0)}%)`)
  if (saturated.length) return saturated.join(' + ')
  const sum = known.reduce((n, [, v]) => n + v, 0)
  if (sum >= SATURATED * m.cores) return `all ${m.cores} cores (${sum.toFixed(0)}% together)`
  if (m.load > m.cores) return `other processes' CPU (load ${m.load.toFixed(1)} on ${m.cores} cores)`
  return 'no CPU (waits: latency, flow control)'
}

/** Operations per CPU-second of a process at `cpuPercent` of a core and `perSec` operations/s. */
export const perCpuSecond = (perSec: number, cpuPercent: number | undefined) =>
  cpuPercent === undefined || !(cpuPercent > 0) ? undefined : perSec / (cpuPercent / 100)
