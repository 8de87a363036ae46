/** The console table and the files of bench/results/<timestamp>/ (results.json, summary.md, charts as .svg). */
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import type { Headline, RunOptions, ScenarioResult, Table } from './scenario'
import { renderChart } from './svg-chart'

const HEAD = [
  'target',
  'request',
  'req/s',
  'responses',
  'non-expected',
  'unanswered',
  'conn err',
  'loadgen CPU',
  'server CPU',
]

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const pct = (n: number | undefined) => (n === undefined ? 'n/a' : `${n.toFixed(0)}%`)

function rows(r: ScenarioResult): string[][] {
  return r.measurements.map((m) => [
    m.target,
    m.request,
    fmt(m.load.rps),
    fmt(m.load.responses),
    String(m.load.unexpected),
    String(m.load.unanswered),
    String(m.load.connectionErrors + m.load.protocolErrors),
    pct(m.load.cpuPercent),
    pct(m.load.serverCpuPercent),
  ])
}

export function machine() {
  const c = cpus()
  return {
    cpus: c.length,
    cpuModel: c[0]?.model ?? 'unknown',
    platform: `${process.platform}-${process.arch}`,
    bun: Bun.version,
    loadavg1m: loadavg()[0],
  }
}

/** Tables of a result: the loadgen runs (first two columns text) and the scenario's own (first column text). */
function tables(r: ScenarioResult): Array<Table & { textColumns: number }> {
  const out: Array<Table & { textColumns: number }> = []
  if (r.measurements.length) out.push({ title: '', head: HEAD, rows: rows(r), textColumns: 2 })
  for (const t of r.tables ?? []) out.push({ ...t, textColumns: 1 })
  return out
}

const headline = (h: Headline) =>
  `${h.name}: ${fmtValue(h.value)} ${h.unit}${h.target ? ` (target ${h.target}: ${h.met ? 'met' : 'not met'})` : ''}`
const fmtValue = (v: number) => (Math.abs(v) >= 100 ? fmt(v) : v.toFixed(Math.abs(v) >= 10 ? 1 : 3))

export function printTable(r: ScenarioResult): void {
  for (const t of tables(r)) {
    const all = [t.head, ...t.rows]
    const width = t.head.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)))
    const line = (row: string[]) =>
      row.map((cell, i) => (i < t.textColumns ? cell.padEnd(width[i]!) : cell.padStart(width[i]!))).join('  ')
    console.log(`\n${t.title ? `${t.title}\n` : ''}${line(t.head)}\n${width.map((w) => '-'.repeat(w)).join('  ')}`)
    for (const row of t.rows) console.log(line(row))
  }
  console.log('')
  for (const h of r.headlines ?? []) console.log(headline(h))
  for (const [name, v] of Object.entries(r.ratios)) console.log(`${name}: ${v.toFixed(3)}`)
  for (const c of r.checks) console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`)
  for (const n of r.notes ?? []) console.log(`note: ${n}`)
}

function markdown(r: ScenarioResult, o: RunOptions, startedAt: string): string {
  const m = machine()
  const md = tables(r).map((t) =>
    [
      ...(t.title ? [`### ${t.title}`, ''] : []),
      [t.head, t.head.map((_, i) => (i < t.textColumns ? '---' : '---:')), ...t.rows]
        .map((row) => `| ${row.join(' | ')} |`)
        .join('\n'),
      '',
    ].join('\n'),
  )
  return [
    `# Benchmark: ${r.scenario}${o.short ? ' (short smoke run)' : ''}`,
    '',
    r.description,
    '',
    `- started: ${startedAt}`,
    `- machine: ${m.cpus} × ${m.cpuModel}, ${m.platform}, Bun ${m.bun} (generator on the same machine; load average ${m.loadavg1m?.toFixed(2)} at the end)`,
    `- load: ${r.load ?? `${o.connections} keep-alive connections × pipeline ${o.pipeline}, ${o.warmup} s warm-up + ${o.seconds} s measured per target`}`,
    '',
    ...md,
    ...(r.headlines ?? []).map((h) => `- **${headline(h)}**`),
    ...Object.entries(r.ratios).map(([k, v]) => `**${k}: ${v.toFixed(3)}**`),
    '',
    ...(r.charts?.length ? ['## Charts', '', ...r.charts.flatMap((c) => [`![${c.title}](${c.file})`, '']), ''] : []),
    '## Checks',
    '',
    ...r.checks.map((c) => `- ${c.ok ? '✅' : '❌'} ${c.name}: ${c.detail}`),
    ...(r.notes?.length ? ['', '## Notes', '', ...r.notes.map((n) => `- ${n}`)] : []),
    '',
  ].join('\n')
}

/** Writes results.json and summary.md into o.outDir. */
export async function writeResults(r: ScenarioResult, o: RunOptions, startedAt: string): Promise<void> {
  const ok = r.checks.every((c) => c.ok)
  await Bun.write(
    join(o.outDir, 'results.json'),
    `${JSON.stringify({ ...r, ok, startedAt, options: o, machine: machine() }, null, 2)}\n`,
  )
  for (const c of r.charts ?? []) await Bun.write(join(o.outDir, c.file), renderChart(c))
  await Bun.write(join(o.outDir, 'summary.md'), markdown(r, o, startedAt))
}
