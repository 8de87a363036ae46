/**
 * A small Prometheus registry: counters, gauges (set or computed at scrape time) and histograms,
 * rendered in the text exposition format. One registry per process (`metrics`).
 */
type Labels = Record<string, string>

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
const fmt = (labels: Labels) => {
  const e = Object.entries(labels)
  return e.length ? `{${e.map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`).join(',')}}` : ''
}

export class Counter {
  private values = new Map<string, { labels: Labels; value: number }>()
  constructor(readonly name: string, readonly help: string, readonly type: 'counter' | 'gauge' = 'counter') {}

  inc(labels: Labels = NO_LABELS, n = 1): void {
    const k = key(labels)
    const v = this.values.get(k)
    if (v) v.value += n
    else this.values.set(k, { labels, value: n })
  }

  set(labels: Labels, value: number): void {
    this.values.set(key(labels), { labels, value })
  }

  render(): string[] {
    return [...this.values.values()].map((v) => `${this.name}${fmt(v.labels)} ${v.value}`)
  }
}

export class Histogram {
  private series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>()
  constructor(readonly name: string, readonly help: string, readonly buckets: number[]) {}

  observe(labels: Labels, value: number): void {
    const k = key(labels)
    let s = this.series.get(k)
    if (!s) this.series.set(k, (s = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }))
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) s.counts[i]!++
    s.sum += value
    s.count++
  }

  render(): string[] {
    const out: string[] = []
    for (const s of this.series.values()) {
      this.buckets.forEach((b, i) => out.push(`${this.name}_bucket${fmt({ ...s.labels, le: String(b) })} ${s.counts[i]}`))
      out.push(`${this.name}_bucket${fmt({ ...s.labels, le: '+Inf' })} ${s.count}`)
      out.push(`${this.name}_sum${fmt(s.labels)} ${s.sum}`, `${this.name}_count${fmt(s.labels)} ${s.count}`)
    }
    return out
  }
}

export class Registry {
  private items = new Map<string, Counter | Histogram>()
  private collectors = new Map<string, { help: string; collect: Array<() => number> }>()

  counter(name: string, help: string): Counter {
    return this.get(name, () => new Counter(name, help)) as Counter
  }

  gaugeSet(name: string, help: string): Counter {
    return this.get(name, () => new Counter(name, help, 'gauge')) as Counter
  }

  histogram(name: string, help: string, buckets: number[]): Histogram {
    return this.get(name, () => new Histogram(name, help, buckets)) as Histogram
  }

  /** A gauge computed at scrape time; several sources of one name are summed. */
  gauge(name: string, help: string, collect: () => number): () => void {
    let c = this.collectors.get(name)
    if (!c) this.collectors.set(name, (c = { help, collect: [] }))
    c.collect.push(collect)
    return () => { c!.collect = c!.collect.filter((f) => f !== collect) }
  }

  private get(name: string, make: () => Counter | Histogram) {
    let m = this.items.get(name)
    if (!m) this.items.set(name, (m = make()))
    return m
  }

  render(): string {
    const lines: string[] = []
    for (const m of this.items.values()) {
      lines.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m instanceof Histogram ? 'histogram' : m.type}`, ...m.render())
    }
    for (const [name, c] of this.collectors) {
      let v = 0
      for (const f of c.collect) { try { v += f() } catch { /* a failing source counts as 0 */ } }
      lines.push(`# HELP ${name} ${c.help}`, `# TYPE ${name} gauge`, `${name} ${v}`)
    }
    return lines.join('\n') + '\n'
  }
}

export const metrics = new Registry()

/** Event-loop lag: how late a 500 ms timer fires, as a gauge in seconds. */
export function monitorEventLoop(registry = metrics): () => void {
  const lag = registry.gaugeSet('gateway_event_loop_lag_seconds', 'How late a 500 ms timer fired, last sample.')
  let last = performance.now()
  const t = setInterval(() => {
    const now = performance.now()
    lag.set({}, Math.max(0, (now - last - 500) / 1000))
    last = now
  }, 500)
  t.unref?.()
  return () => clearInterval(t)
}
