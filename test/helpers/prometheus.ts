/**
 * A strict parser of the Prometheus text exposition format (0.0.4), checking what `promtool check
 * metrics` checks (promtool is not installed here: Debian ships it only inside the 96 MB
 * `prometheus` server package): syntax of every line, HELP/TYPE at most once per family and
 * before its samples, families not interleaved, no duplicate series, counters named `_total`,
 * histograms with an `le` on every bucket, cumulative buckets ending in `+Inf` equal to `_count`.
 */
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}
export interface Family {
  name: string
  type: string
  help?: string
  samples: Sample[]
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped'])
const SUFFIXES: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['_sum', '_count'] }

function parseValue(raw: string, where: string): number {
  if (raw === '+Inf' || raw === 'Inf') return Infinity
  if (raw === '-Inf') return -Infinity
  if (raw === 'NaN') return NaN
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw new Error(`${where}: bad value "${raw}"`)
  return Number(raw)
}

function parseLabels(s: string, where: string): Record<string, string> {
  const labels: Record<string, string> = {}
  let i = 0
  while (i < s.length) {
    const eq = s.indexOf('=', i)
    if (eq < 0) throw new Error(`${where}: label without value`)
    const name = s.slice(i, eq)
    if (!LABEL.test(name)) throw new Error(`${where}: bad label name "${name}"`)
    if (name in labels) throw new Error(`${where}: duplicate label "${name}"`)
    if (s[eq + 1] !== '"') throw new Error(`${where}: label value not quoted`)
    let v = ''
    let j = eq + 2
    for (; j < s.length && s[j] !== '"'; j++) {
      if (s[j] === '\\') {
        const n = s[++j]
        if (n === 'n') v += '\n'
        else if (n === '\\' || n === '"') v += n
        else throw new Error(`${where}: bad escape \\${n}`)
      } else v += s[j]
    }
    if (j >= s.length) throw new Error(`${where}: unterminated label value`)
    labels[name] = v
    i = j + 1
    if (s[i] === ',') i++
    else if (i < s.length) throw new Error(`${where}: expected , after label`)
  }
  return labels
}

/** Parses and checks `text`; throws with the line at fault. */
export function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('exposition must end with a newline')
  const families = new Map<string, Family>()
  const seen = new Set<string>()
  let current: Family | undefined
  const familyOf = (sample: string): string => {
    for (const [name, f] of families)
      for (const suffix of SUFFIXES[f.type] ?? []) if (sample === name + suffix) return name
    return sample
  }
  const enter = (name: string, where: string): Family => {
    let f = families.get(name)
    if (f && current !== f) throw new Error(`${where}: family ${name} interleaved with another`)
    if (!f) families.set(name, (f = { name, type: 'untyped', samples: [] }))
    current = f
    return f
  }
  text
    .slice(0, -1)
    .split('\n')
    .forEach((line, n) => {
      const where = `line ${n + 1} "${line}"`
      if (line.startsWith('#')) {
        const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line)
        if (!m) return // a comment
        const [, kind, name, rest = ''] = m
        if (!NAME.test(name!)) throw new Error(`${where}: bad metric name`)
        const f = enter(name!, where)
        if (kind === 'HELP') {
          if (f.help !== undefined) throw new Error(`${where}: second HELP`)
          f.help = rest
        } else {
          if (!TYPES.has(rest)) throw new Error(`${where}: unknown type`)
          if (f.samples.length) throw new Error(`${where}: TYPE after samples`)
          if (f.type !== 'untyped') throw new Error(`${where}: second TYPE`)
          f.type = rest
        }
        return
      }
      if (line.trim() === '') throw new Error(`${where}: blank line`)
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line)
      if (!m) throw new Error(`${where}: not a sample`)
      const [, name, labelText = '', raw] = m
      const labels = parseLabels(labelText, where)
      const f = enter(familyOf(name!), where)
      const series = name + JSON.stringify(Object.entries(labels).sort())
      if (seen.has(series)) throw new Error(`${where}: duplicate series`)
      seen.add(series)
      f.samples.push({ name: name!, labels, value: parseValue(raw!, where) })
    })
  for (const f of families.values()) {
    if (f.type === 'counter' && !f.name.endsWith('_total')) throw new Error(`counter ${f.name} should end in _total`)
    for (const s of f.samples) {
      if (f.type === 'counter' && !(s.value >= 0)) throw new Error(`counter ${f.name} has a negative value`)
      if (s.name !== f.name && !(SUFFIXES[f.type] ?? []).some((x) => s.name === f.name + x))
        throw new Error(`sample ${s.name} does not belong to ${f.type} ${f.name}`)
    }
    if (f.type === 'histogram') checkHistogram(f)
  }
  return families
}

function checkHistogram(f: Family) {
  const groups = new Map<string, Sample[]>()
  for (const s of f.samples) {
    const { le, ...rest } = s.labels
    if (s.name.endsWith('_bucket') && le === undefined) throw new Error(`${f.name}: bucket without le`)
    const k = JSON.stringify(Object.entries(rest).sort())
    groups.set(k, [...(groups.get(k) ?? []), s])
  }
  for (const samples of groups.values()) {
    const buckets = samples.filter((s) => s.name.endsWith('_bucket'))
    const count = samples.find((s) => s.name.endsWith('_count'))
    if (!samples.find((s) => s.name.endsWith('_sum')) || !count) throw new Error(`${f.name}: _sum or _count missing`)
    let last = -Infinity
    let prev = 0
    for (const b of buckets) {
      const le = parseValue(b.labels.le!, f.name)
      if (!(le > last)) throw new Error(`${f.name}: buckets not in increasing le order`)
      if (b.value < prev) throw new Error(`${f.name}: buckets not cumulative`)
      last = le
      prev = b.value
    }
    if (last !== Infinity) throw new Error(`${f.name}: no +Inf bucket`)
    if (prev !== count.value) throw new Error(`${f.name}: +Inf bucket differs from _count`)
  }
}
