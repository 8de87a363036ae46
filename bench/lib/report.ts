/** The console table and the files of bench/results/<timestamp>/ (results.json, summary.md). */
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import type { RunOptions, ScenarioResult } from './scenario'

const HEAD = ['target', 'request', 'req/s', 'responses', 'non-expected', 'unanswered', 'conn err', 'loadgen CPU', 'server CPU']

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const pct = (n: number | undefined) => (n === undefined ? 'n/a' : `${n.toFixed(0)}%`)

function rows(r: ScenarioResult): string[][] {
  return r.measurements.map((m) => [
    m.target, m.request, fmt(m.load.rps), fmt(m.load.responses), String(m.load.unexpected), String(m.load.unanswered),
    String(m.load.connectionErrors + m.load.protocolErrors), pct(m.load.cpuPercent), pct(m.load.serverCpuPercent),
  ])
}

export function machine() {
  const c = cpus()
  return { cpus: c.length, cpuModel: c[0]?.model ?? 'unknown', platform: `${process.platform}-${process.arch}`, bun: Bun.version, loadavg1m: loadavg()[0] }
}

export function printTable(r: ScenarioResult): void {
  const all = [HEAD, ...rows(r)]
  const width = HEAD.map((_, i) => Math.max(...all.map((row) => row[i]!.length)))
  const line = (row: string[]) => row.map((cell, i) => (i < 2 ? cell.padEnd(width[i]!) : cell.padStart(width[i]!))).join('  ')
  console.log(`\n${line(HEAD)}\n${width.map((w) => '-'.repeat(w)).join('  ')}`)
  for (const row of rows(r)) console.log(line(row))
  for (const [name, v] of Object.entries(r.ratios)) console.log(`\n${name}: ${v.toFixed(3)}`)
  for (const c of r.checks) console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`)
}

function markdown(r: ScenarioResult, o: RunOptions, startedAt: string): string {
  const m = machine()
  const table = [HEAD, HEAD.map((_, i) => (i < 2 ? '---' : '---:')), ...rows(r)].map((row) => `| ${row.join(' | ')} |`).join('\n')
  return [
    `# Benchmark: ${r.scenario}${o.short ? ' (short smoke run)' : ''}`,
    '',
    r.description,
    '',
    `- started: ${startedAt}`,
    `- machine: ${m.cpus} × ${m.cpuModel}, ${m.platform}, Bun ${m.bun} (generator on the same machine)`,
    `- load: ${o.connections} keep-alive connections × pipeline ${o.pipeline}, ${o.warmup} s warm-up + ${o.seconds} s measured per target`,
    '',
    table,
    '',
    ...Object.entries(r.ratios).map(([k, v]) => `**${k}: ${v.toFixed(3)}**`),
    '',
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
  await Bun.write(join(o.outDir, 'results.json'), `${JSON.stringify({ ...r, ok, startedAt, options: o, machine: machine() }, null, 2)}\n`)
  await Bun.write(join(o.outDir, 'summary.md'), markdown(r, o, startedAt))
}
