/**
 * Hand-written SVG charts for summary.md (no chart library): a line chart (e.g. throughput per
 * second over a run) and a grouped bar chart (e.g. latency percentiles per backend). Plain SVG 1.1
 * with inline styles, so it renders on GitHub, in browsers and in image viewers alike.
 */
import type { Chart, Series } from './scenario'

const W = 760
const H = 400
const M = { top: 58, right: 24, bottom: 52, left: 78 }
const PLOT_W = W - M.left - M.right
const PLOT_H = H - M.top - M.bottom
const COLORS = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf',
  '#7f7f7f',
  '#bcbd22',
]

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** Short tick label: 1.5M, 250k, 12, 0.25. */
export function short(v: number): string {
  const a = Math.abs(v)
  const trim = (x: number) => String(Number(x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : 2)))
  if (a >= 1e9) return `${trim(v / 1e9)}G`
  if (a >= 1e6) return `${trim(v / 1e6)}M`
  if (a >= 1e3) return `${trim(v / 1e3)}k`
  return trim(v)
}

/** A round axis maximum at or above `v` (1, 2, 2.5, 5 × 10^n) and its tick step. */
function niceScale(v: number, ticks = 5): { max: number; step: number } {
  if (!(v > 0) || !Number.isFinite(v)) return { max: 1, step: 0.2 }
  const raw = v / ticks
  const mag = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s * ticks >= v) ?? 10 * mag
  return { max: step * ticks, step }
}

function frame(title: string, yLabel: string, xLabel: string, yMax: number, yStep: number, body: string[]): string {
  const y = (v: number) => M.top + PLOT_H - (v / yMax) * PLOT_H
  const grid: string[] = []
  for (let v = 0; v <= yMax + yStep / 2; v += yStep) {
    grid.push(
      `<line x1="${M.left}" x2="${M.left + PLOT_W}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e0e0e0"/>`,
    )
    grid.push(`<text x="${M.left - 8}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${esc(short(v))}</text>`)
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12" fill="#222">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`,
    ...grid,
    `<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${M.top + PLOT_H}" stroke="#444"/>`,
    `<line x1="${M.left}" x2="${M.left + PLOT_W}" y1="${M.top + PLOT_H}" y2="${M.top + PLOT_H}" stroke="#444"/>`,
    `<text x="16" y="${M.top + PLOT_H / 2}" text-anchor="middle" transform="rotate(-90 16 ${M.top + PLOT_H / 2})">${esc(yLabel)}</text>`,
    `<text x="${M.left + PLOT_W / 2}" y="${H - 10}" text-anchor="middle">${esc(xLabel)}</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n')
}

/** Legend in a row between the title and the plot (wrapping onto a second row when long). */
function legend(names: string[]): string[] {
  let x = M.left
  let y = 38
  return names.map((n, i) => {
    const w = 24 + n.length * 6.6
    if (x + w > W - M.right && x > M.left) {
      x = M.left
      y += 14
    }
    const out =
      `<rect x="${x.toFixed(1)}" y="${y - 9}" width="12" height="10" fill="${COLORS[i % COLORS.length]}"/>` +
      `<text x="${(x + 17).toFixed(1)}" y="${y}">${esc(n)}</text>`
    x += w
    return out
  })
}

export function lineChart(title: string, xLabel: string, yLabel: string, series: Series[]): string {
  const all = series.flatMap((s) => s.points)
  const xMaxRaw = Math.max(1, ...all.map((p) => p[0]))
  const x = niceScale(xMaxRaw, 6)
  const yS = niceScale(Math.max(0, ...all.map((p) => p[1])))
  const px = (v: number) => M.left + (v / x.max) * PLOT_W
  const py = (v: number) => M.top + PLOT_H - (Math.max(0, v) / yS.max) * PLOT_H
  const body: string[] = []
  for (let v = 0; v <= x.max + x.step / 2; v += x.step) {
    body.push(`<text x="${px(v).toFixed(1)}" y="${M.top + PLOT_H + 18}" text-anchor="middle">${esc(short(v))}</text>`)
  }
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]
    const pts = s.points.map(([a, b]) => `${px(a).toFixed(1)},${py(b).toFixed(1)}`).join(' ')
    const dash = s.dashed ? ' stroke-dasharray="7 4"' : ''
    if (s.points.length > 1)
      body.push(`<polyline fill="none" stroke="${color}" stroke-width="2"${dash} points="${pts}"/>`)
    for (const [a, b] of s.points.length <= 60 ? s.points : [])
      body.push(`<circle cx="${px(a).toFixed(1)}" cy="${py(b).toFixed(1)}" r="2.5" fill="${color}"/>`)
  })
  body.push(...legend(series.map((s) => s.name)))
  return frame(title, yLabel, xLabel, yS.max, yS.step, body)
}

export function barChart(
  title: string,
  yLabel: string,
  categories: string[],
  groups: Array<{ name: string; values: number[] }>,
): string {
  const yS = niceScale(Math.max(0, ...groups.flatMap((g) => g.values.filter(Number.isFinite))))
  const slot = PLOT_W / Math.max(1, categories.length)
  const barW = Math.min(60, (slot * 0.8) / Math.max(1, groups.length))
  const py = (v: number) => M.top + PLOT_H - (Math.max(0, v) / yS.max) * PLOT_H
  const body: string[] = []
  categories.forEach((c, ci) => {
    const x0 = M.left + ci * slot + (slot - barW * groups.length) / 2
    groups.forEach((g, gi) => {
      const v = g.values[ci]
      if (v === undefined || !Number.isFinite(v)) return
      const x = x0 + gi * barW
      body.push(
        `<rect x="${x.toFixed(1)}" y="${py(v).toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${(M.top + PLOT_H - py(v)).toFixed(1)}" fill="${COLORS[gi % COLORS.length]}"/>`,
      )
      body.push(
        `<text x="${(x + barW / 2 - 1).toFixed(1)}" y="${(py(v) - 4).toFixed(1)}" text-anchor="middle" font-size="10">${esc(short(v))}</text>`,
      )
    })
    body.push(
      `<text x="${(M.left + ci * slot + slot / 2).toFixed(1)}" y="${M.top + PLOT_H + 18}" text-anchor="middle">${esc(c)}</text>`,
    )
  })
  if (groups.length > 1 || groups[0]?.name) body.push(...legend(groups.map((g) => g.name)))
  return frame(title, yLabel, '', yS.max, yS.step, body)
}

export function renderChart(c: Chart): string {
  return c.kind === 'line'
    ? lineChart(c.title, c.xLabel, c.yLabel, c.series)
    : barChart(c.title, c.yLabel, c.categories, c.groups)
}
