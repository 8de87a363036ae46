// A bar chart in SVG, drawn from numbers: one group of bars per interval, one bar per series,
// an axis with its maximum, and a time axis naming every few intervals (the newest always). Each bar carries its value as a
// tooltip and as data attributes, so the chart can be read by people and tests alike.
import { h, s } from './dom.js'

const W = 640
const H = 180
const LEFT = 44
const BOTTOM = 22
const TOP = 10

/** A round axis maximum at or above `max` (1, 2 or 5 times a power of ten). */
export function niceMax(max) {
  if (max <= 0) return 1
  const p = 10 ** Math.floor(Math.log10(max))
  return [1, 2, 5, 10].map((m) => m * p).find((v) => v >= max)
}

/**
 * `series`: `[{name, cls}]`; `points`: `[{label, values: [number per series]}]`, oldest first.
 * Returns the figure's caption (title and legend) and the SVG.
 */
export function barChart({ title, series, points }) {
  const top = niceMax(Math.max(0, ...points.flatMap((p) => p.values)))
  const plotW = W - LEFT
  const plotH = H - BOTTOM - TOP
  const slot = plotW / Math.max(1, points.length)
  const bar = Math.max(1, (slot * 0.8) / series.length)
  const y = (v) => TOP + plotH - (v / top) * plotH
  const bars = points.flatMap((p, i) =>
    series.map((sr, j) => {
      const v = p.values[j] ?? 0
      return s(
        'rect',
        {
          class: `bar ${sr.cls}`,
          'data-series': sr.name,
          'data-label': p.label,
          'data-value': v,
          x: (LEFT + i * slot + slot * 0.1 + j * bar).toFixed(1),
          y: y(v).toFixed(1),
          width: bar.toFixed(1),
          height: (TOP + plotH - y(v)).toFixed(1),
        },
        s('title', { text: `${p.label}: ${sr.name} ${v}` }),
      )
    }),
  )
  const axis = [0, top / 2, top].map((v) =>
    s(
      'g',
      { class: 'tick' },
      s('line', { x1: LEFT, x2: W, y1: y(v), y2: y(v) }),
      s('text', { x: LEFT - 4, y: y(v) + 4, 'text-anchor': 'end', text: formatCount(v) }),
    ),
  )
  const labels = timeLabels(points, slot)
  const svg = s(
    'svg',
    { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': title, class: 'bars' },
    ...axis,
    ...bars,
    ...labels,
  )
  const legend = series.map((sr) => h('span', { class: `legend ${sr.cls}`, text: sr.name }))
  return [h('figcaption', {}, h('strong', { text: title }), ' ', ...legend), svg]
}

/** At most this many interval names under a chart (60 minutes: every 10th; 24 hours: every 4th). */
const TIME_LABELS = 6

/** Names of every `step`-th interval, counted back from the newest, each under a tick of its slot. */
function timeLabels(points, slot) {
  const step = Math.ceil(points.length / TIME_LABELS)
  const out = []
  for (let i = points.length - 1; i >= 0; i -= step) {
    const x = LEFT + (i + 0.5) * slot
    const last = i === points.length - 1
    out.push(
      s('line', { class: 'time-tick', x1: x.toFixed(1), x2: x.toFixed(1), y1: H - BOTTOM, y2: H - BOTTOM + 4 }),
      s('text', {
        class: 'time',
        x: last ? W : x.toFixed(1),
        y: H - 6,
        'text-anchor': last ? 'end' : 'middle',
        text: points[i].label,
      }),
    )
  }
  return out
}

/** 1234 -> "1.2k", 2500000 -> "2.5M"; small numbers as they are. */
export function formatCount(n) {
  if (n >= 1e6) return `${+(n / 1e6).toFixed(1)}M`
  if (n >= 1e4) return `${+(n / 1e3).toFixed(1)}k`
  return String(+n.toFixed(2))
}
