import { readdirSync, readFileSync } from 'node:fs'

/**
 * A small Prometheus registry: counters, gauges (set or computed at scrape time) and histograms,
 * rendered in the text exposition format (0.0.4). One registry per process (`metrics`).
 */
export type Labels = Record<string, string>

/** Unlabelled series: no key to compute, which keeps hot-path increments cheap. */
export const NO_LABELS: Labels = Object.freeze({})
const keys = new WeakMap<Labels, string>()
/** Series key; label objects that are reused (as hot paths should) are serialized once. */
const key = (labels: Labels): string => {
  if (labels === NO_LABELS) return ''
  let k = keys.get(labels)
  if (k === undefined) keys.set(labels, (k = JSON.stringify(Object.entries(labels).sort())))
  return k
}
const escape = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
const fmt = (labels: Labels) => {
  const e = Object.entries(labels)
  return e.length ? `{${e.map(([k, v]) => `${k}="${escape(v)}"`).join(',')}}` : ''
}
/** Sample values as the format spells them (Go's ParseFloat accepts these). */
const num = (v: number) => (Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v))

/** One series of a counter or set gauge; hot paths keep it and add to `value` directly. */
export interface Series {
  labels: Labels
  value: number
}

export class Counter {
  private values = new Map<string, Series>()
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' = 'counter',
  ) {}

  series(labels: Labels = NO_LABELS): Series {
    const k = key(labels)
    let s = this.values.get(k)
    if (!s) this.values.set(k, (s = { labels, value: 0 }))
    return s
  }

  inc(labels: Labels = NO_LABELS, n = 1): void {
    this.series(labels).value += n
  }

  set(labels: Labels, value: number): void {
    this.series(labels).value = value
  }

  render(): string[] {
    return [...this.values.values()].map((v) => `${this.name}${fmt(v.labels)} ${num(v.value)}`)
  }
}

/** One series of a histogram (per-bucket counts, not cumulative: summed when rendered). */
export interface HistogramSeries {
  labels: Labels
  counts: number[]
  sum: number
  count: number
}

export class Histogram {
  private series_ = new Map<string, HistogramSeries>()
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: number[],
  ) {}

  series(labels: Labels): HistogramSeries {
    const k = key(labels)
    let s = this.series_.get(k)
    if (!s) this.series_.set(k, (s = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }))
    return s
  }

  observe(labels: Labels, value: number): void {
    this.observeIn(this.series(labels), value)
  }

  /** Hot-path form: one bucket incremented (the first upper bound >= value), no lookup. */
  observeIn(s: HistogramSeries, value: number): void {
    const b = this.buckets
    let i = 0
    while (i < b.length && value > b[i]!) i++
    if (i < b.length) s.counts[i]!++
    s.sum += value
    s.count++
  }

  render(): string[] {
    const out: string[] = []
    for (const s of this.series_.values()) {
      let cumulative = 0
      this.buckets.forEach((b, i) => {
        cumulative += s.counts[i]!
        out.push(`${this.name}_bucket${fmt({ ...s.labels, le: String(b) })} ${cumulative}`)
      })
      out.push(`${this.name}_bucket${fmt({ ...s.labels, le: '+Inf' })} ${s.count}`)
      out.push(`${this.name}_sum${fmt(s.labels)} ${num(s.sum)}`, `${this.name}_count${fmt(s.labels)} ${s.count}`)
    }
    return out
  }
}

interface Collector {
  help: string
  type: 'gauge' | 'counter'
  sources: Array<{ labels: Labels; collect: () => number }>
}

export class Registry {
  private items = new Map<string, Counter | Histogram>()
  private collectors = new Map<string, Collector>()

  counter(name: string, help: string): Counter {
    return this.get(name, () => new Counter(name, help)) as Counter
  }

  gaugeSet(name: string, help: string): Counter {
    return this.get(name, () => new Counter(name, help, 'gauge')) as Counter
  }

  histogram(name: string, help: string, buckets: number[]): Histogram {
    return this.get(name, () => new Histogram(name, help, buckets)) as Histogram
  }

  /**
   * A value computed at scrape time (a gauge, or a counter the process keeps elsewhere); sources
   * of one name and label set are summed. Returns the function that removes this source.
   */
  gauge(
    name: string,
    help: string,
    collect: () => number,
    labels: Labels = NO_LABELS,
    type: 'gauge' | 'counter' = 'gauge',
  ): () => void {
    let c = this.collectors.get(name)
    if (!c) this.collectors.set(name, (c = { help, type, sources: [] }))
    const source = { labels, collect }
    c.sources.push(source)
    return () => {
      c!.sources = c!.sources.filter((s) => s !== source)
    }
  }

  private get(name: string, make: () => Counter | Histogram) {
    let m = this.items.get(name)
    if (!m) this.items.set(name, (m = make()))
    return m
  }

  /** Metric names this registry renders (families, without the histogram suffixes). */
  names(): string[] {
    return [...this.items.keys(), ...this.collectors.keys()]
  }

  render(): string {
    const lines: string[] = []
    for (const m of this.items.values()) {
      lines.push(
        `# HELP ${m.name} ${m.help}`,
        `# TYPE ${m.name} ${m instanceof Histogram ? 'histogram' : m.type}`,
        ...m.render(),
      )
    }
    for (const [name, c] of this.collectors) {
      const sums = new Map<string, Series>()
      for (const s of c.sources) {
        let v = 0
        try {
          v = s.collect()
        } catch {
          /* a failing source counts as 0 */
        }
        const k = key(s.labels)
        const sum = sums.get(k)
        if (sum) sum.value += v
        else sums.set(k, { labels: s.labels, value: v })
      }
      // a family with no source left still says what it is, with no sample
      lines.push(`# HELP ${name} ${c.help}`, `# TYPE ${name} ${c.type}`)
      for (const s of sums.values()) lines.push(`${name}${fmt(s.labels)} ${num(s.value)}`)
    }
    return lines.join('\n') + '\n'
  }
}

export const metrics = new Registry()

/**
 * Open client connections by transport (`event-stream`, `realtime`, ...), summed over sources:
 * what a transport calls once with a function counting its open connections. Returns the remover.
 */
export const trackConnections = (transport: string, count: () => number, registry = metrics): (() => void) =>
  registry.gauge('gateway_connections', 'Open client connections on this node, by transport.', count, { transport })

/**
 * Messages written to client connections by one transport (`event-stream`, `realtime`): the series
 * a transport adds each batch's count to (per batch and connection, never per message).
 */
export const deliveredBy = (transport: string, registry = metrics): Series =>
  registry
    .counter(
      'gateway_messages_delivered_total',
      'Messages written to client connections, by transport (event-stream, realtime).',
    )
    .series(Object.freeze({ transport }))

/**
 * The time of latency metrics: monotonic ms with sub-ms precision. For durations observed into a
 * histogram only, never a time anything acts on (the core's time is its Clock, lib/clock.ts).
 */
export const latencyNow = (): number => performance.now()

let loopMonitored = false
/** Event-loop lag: how late a 500 ms timer fires, as a gauge in seconds. Once per process. */
export function monitorEventLoop(registry = metrics): void {
  if (loopMonitored) return
  loopMonitored = true
  const lag = registry.gaugeSet('gateway_event_loop_lag_seconds', 'How late a 500 ms timer fired, last sample.')
  let last = performance.now()
  const t = setInterval(() => {
    const now = performance.now()
    lag.set(NO_LABELS, Math.max(0, (now - last - 500) / 1000))
    last = now
  }, 500)
  t.unref?.()
}

let processMonitored = false
/**
 * The standard process metrics (CPU, memory, file descriptors, start time) and
 * `gateway_build_info{version,runtime,...} 1`. Once per process; file descriptors only where
 * /proc exists (Linux).
 */
export function monitorProcess(build: Labels, registry = metrics): void {
  if (processMonitored) return
  processMonitored = true
  registry.gauge('gateway_build_info', 'Version of the running gateway (value 1).', () => 1, {
    ...build,
    runtime: `bun ${typeof Bun === 'undefined' ? 'unknown' : Bun.version}`,
  })
  registry.gauge(
    'process_cpu_seconds_total',
    'Total user and system CPU time spent in seconds.',
    () => {
      const u = process.cpuUsage()
      return (u.user + u.system) / 1e6
    },
    NO_LABELS,
    'counter',
  )
  registry.gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', () => process.memoryUsage.rss())
  registry.gauge('process_heap_bytes', 'JavaScript heap in use in bytes.', () => process.memoryUsage().heapUsed)
  const started = (performance.timeOrigin || Date.now()) / 1000
  registry.gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', () => started)
  try {
    readdirSync('/proc/self/fd')
  } catch {
    return
  }
  // the listing's own descriptor is not counted
  registry.gauge('process_open_fds', 'Number of open file descriptors.', () => readdirSync('/proc/self/fd').length - 1)
  registry.gauge('process_max_fds', 'Maximum number of open file descriptors.', () => {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    return !m || m[1] === 'unlimited' ? -1 : Number(m[1])
  })
}
