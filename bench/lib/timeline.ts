/**
 * Throughput over time: samples a run's cumulative counters (and gauges) once a second, prints a
 * progress line per sample and keeps the per-second rates as chart series (svg-chart.ts).
 */
import { fmt } from './delivery-checks'
import type { Series } from './scenario'

export interface Sample {
  /** Cumulative counts (e.g. messages received); each becomes a per-second rate. */
  counters?: Record<string, number>
  /** Values shown as they are (e.g. open streams). */
  gauges?: Record<string, number>
}

export class Timeline {
  private readonly points = new Map<string, Array<[number, number]>>()
  private prev?: { t: number; counters: Record<string, number> }
  private t0 = 0
  private timer?: ReturnType<typeof setInterval>
  private busy = false

  constructor(
    private readonly label: string,
    private readonly read: () => Promise<Sample>,
    private readonly quiet = false,
  ) {}

  start(): this {
    this.t0 = performance.now()
    void this.tick()
    this.timer = setInterval(() => void this.tick(), 1000)
    return this
  }

  /** Stops sampling (one last sample) and returns the series, e.g. "deliveries/s". */
  async stop(): Promise<Series[]> {
    clearInterval(this.timer)
    while (this.busy) await Bun.sleep(5)
    await this.tick()
    return [...this.points].map(([name, points]) => ({ name, points }))
  }

  private async tick(): Promise<void> {
    if (this.busy) return
    this.busy = true
    try {
      const s = await this.read()
      const t = performance.now()
      const x = Math.round((t - this.t0) / 100) / 10
      const parts: string[] = []
      const counters = s.counters ?? {}
      if (this.prev && t - this.prev.t >= 200) {
        const dt = (t - this.prev.t) / 1000
        for (const [k, v] of Object.entries(counters)) {
          const rate = (v - (this.prev.counters[k] ?? 0)) / dt
          this.add(`${k}/s`, x, rate)
          parts.push(`${k} ${fmt(rate)}/s`)
        }
      }
      for (const [k, v] of Object.entries(s.gauges ?? {})) {
        this.add(k, x, v)
        parts.push(`${k} ${fmt(v)}`)
      }
      if (!this.prev || t - this.prev.t >= 200) this.prev = { t, counters }
      if (!this.quiet && parts.length)
        console.log(`  [${this.label}] ${x.toFixed(0).padStart(3)} s: ${parts.join(', ')}`)
    } catch {
      /* a sample that failed (process stopping) is skipped */
    } finally {
      this.busy = false
    }
  }

  private add(name: string, x: number, y: number): void {
    let p = this.points.get(name)
    if (!p) this.points.set(name, (p = []))
    p.push([x, y])
  }
}
