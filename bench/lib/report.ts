/** The console table and the files of bench/results/<timestamp>/ (results.json, summary.md, charts as .svg). */
import { availableParallelism, cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import type { Headline, RunOptions, ScenarioResult, Table } from './scenario'
import { boundOf } from './bound'
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
  'server µs/req',
  'bounded by',
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
    m.load.serverCpuPercent === undefined || !(m.load.rps > 0)
      ? 'n/a'
      : ((m.load.serverCpuPercent / 100 / m.load.rps) * 1e6).toFixed(1),
    boundOf(
      { generator: m.load.cpuPercent, server: m.load.serverCpuPercent, 'redis-server': m.load.redisCpuPercent },
      { cores: availableParallelism(), load: m.load.load1m ?? loadavg()[0] ?? 0 },
    ),
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

/** A headline and its target: judged in a measuring run, never in a smoke run (it measures nothing). */
export const headline = (h: Headline, short: boolean) =>
  `${h.name}: ${fmtValue(h.value)} ${h.unit}${
    h.target ? ` (target ${h.target}: ${short ? 'not judged in a smoke run' : h.met ? 'met' : 'not met'})` : ''
  }`

/** The first words of a smoke run's report. */
export const SMOKE =
  'Smoke run (--short): it checks correctness (loss, duplicates, order, errors) in a few seconds on whatever ' +
  'else the machine runs; its figures measure nothing and no target is judged. Measure without --short.'

/** Why rates of runs on a busy machine differ: see the "bounded by" column. */
const BOUND_NOTE =
  '"bounded by": the process whose CPU was saturated (90% of a core or more) over the window, else all cores ' +
  "busy together, else other processes' CPU (the load average counts every runnable process on the machine), " +
  "else waits. Rates of runs not bounded by the server are not the server's capacity and do not compare " +
  'between runs: compare the CPU per request (server µs/req) instead.'
const fmtValue = (v: number) => (Math.abs(v) >= 100 ? fmt(v) : v.toFixed(Math.abs(v) >= 10 ? 1 : 3))

export function printTable(r: ScenarioResult, short = false): void {
  for (const t of tables(r)) {
    const all = [t.head, ...t.rows]
    const width = t.head.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)))
    const line = (row: string[]) =>
      row.map((cell, i) => (i < t.textColumns ? cell.padEnd(width[i]!) : cell.padStart(width[i]!))).join('  ')
    console.log(`\n${t.title ? `${t.title}\n` : ''}${line(t.head)}\n${width.map((w) => '-'.repeat(w)).join('  ')}`)
    for (const row of t.rows) console.log(line(row))
  }
  console.log('')
  if (short) console.log(SMOKE)
  if (r.measurements.length) console.log(`note: ${BOUND_NOTE}`)
  for (const h of r.headlines ?? []) console.log(headline(h, short))
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
    ...(o.short ? [`**${SMOKE}**`, ''] : []),
    r.description,
    '',
    `- started: ${startedAt}`,
    `- machine: ${m.cpus} × ${m.cpuModel}, ${m.platform}, Bun ${m.bun} (generator on the same machine; load average ${m.loadavg1m?.toFixed(2)} at the end)`,
    `- load: ${r.load ?? `${o.connections} keep-alive connections × pipeline ${o.pipeline}, ${o.warmup} s warm-up + ${o.seconds} s measured per target`}`,
    '',
    ...md,
    ...(r.measurements.length ? [BOUND_NOTE, ''] : []),
    ...(r.headlines ?? []).map((h) => `- **${headline(h, o.short)}**`),
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
