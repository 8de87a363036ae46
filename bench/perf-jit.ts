/**
 * Where a running Bun process's CPU goes, kernel and native time included, by the JavaScript that
 * asked for it (lib/perf-jit.ts): `perf record` of the process for `--seconds` (default 8), its
 * JIT frames named from the JITDump it writes, then its main thread's samples by leaf kind
 * (system call, Bun's native code, libc, JIT code; with or without JavaScript on the stack), by
 * nearest JavaScript frame and by JavaScript function anywhere on the stack.
 *
 *   BUN_JSC_useJITDump=1 BUN_JSC_jitDumpDirectory=/tmp/jitdump npx bun bench/run.ts scale --seconds 20 &
 *   npx bun bench/perf-jit.ts --match src/main.ts --delay 8 --jitdump-dir /tmp/jitdump
 *
 * `--pid P` takes a process at once; `--match S` waits for the newest process whose command line
 * holds S, then `--delay` seconds (default 0). The environment reaches every process the bench
 * starts. Needs Linux `perf` (Debian: `apt-get install linux-perf`) and leave to trace the
 * process (root, or kernel.perf_event_paranoid ≤ 1). The JITDump costs the process 3-7% of its
 * CPU and the recording more (a paced realtime run measured while recorded: 22.9 against 17.7 us
 * per message, 2026-11-30): read the shares, not the rates of such a run. `--top N` rows per table (default 30).
 */
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { parseFlags } from './lib/args'
import { breakdown, codeLoads, JitNames, parseSamples } from './lib/perf-jit'

const f = parseFlags(process.argv.slice(2), {
  pid: 'number',
  match: 'string',
  delay: 'number',
  seconds: 'number',
  'jitdump-dir': 'string',
  top: 'number',
})
const dir = f['jitdump-dir']
if ((f.pid === undefined) === (f.match === undefined) || !dir) {
  console.error(
    'usage: bun bench/perf-jit.ts (--pid P | --match S [--delay N]) --jitdump-dir DIR [--seconds 8] [--top 30]',
  )
  process.exit(2)
}

/**
 * The newest Bun process (highest pid) other than this one whose command line holds `s`: the
 * `npx` and `sh` wrappers of a bench hold it too, and exit when it does (the process of a bench
 * begun again for the allocator keeps its pid).
 */
function newestMatching(s: string): number | undefined {
  let found: number | undefined
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'latin1').replaceAll('\0', ' ')
      const bun = /^bun(\.exe)?$/.test(basename(readlinkSync(`/proc/${pid}/exe`)))
      if (bun && cmd.includes(s) && !cmd.includes('perf-jit.ts') && (found === undefined || pid > found)) found = pid
    } catch {
      /* gone */
    }
  }
  return found
}

let pid = f.pid
while (pid === undefined) {
  pid = newestMatching(f.match!)
  if (pid === undefined) await Bun.sleep(200)
}
await Bun.sleep((f.delay ?? 0) * 1000)
const data = join(tmpdir(), `perf-jit-${pid}.data`)
// CLOCK_MONOTONIC, the JITDump's clock: each sample is named by the code loaded before it
const record = Bun.spawnSync(
  ['perf', 'record', '-k', 'mono', '-g', '-p', String(pid), '-o', data, '--', 'sleep', String(f.seconds ?? 8)],
  {
    stdout: 'ignore',
    stderr: 'pipe',
  },
)
if (record.exitCode !== 0) {
  console.error(`perf record failed: ${record.stderr.toString().trim()}`)
  process.exit(1)
}
// the process's largest dump: a process begun again in place (src/main.ts) wrote a small one first
const dumps = readdirSync(dir)
  .filter((n) => n.endsWith(`-${pid}.dump`))
  .map((n) => join(dir, n))
  .sort((a, b) => statSync(b).size - statSync(a).size)
if (!dumps.length) {
  console.error(
    `no JITDump of ${pid} in ${dir}: was it started with BUN_JSC_useJITDump=1 BUN_JSC_jitDumpDirectory=${dir}?`,
  )
  process.exit(1)
}
const names = new JitNames(codeLoads(readFileSync(dumps[0]!)))
const script = Bun.spawnSync(['perf', 'script', '-i', data, '-F', 'comm,tid,time,ip,sym,dso'], {
  stdout: 'pipe',
  stderr: 'ignore',
})
const b = breakdown(parseSamples(script.stdout.toString(), names), pid)
const top = f.top ?? 30
const table = (title: string, rows: Array<[string, number]>) => {
  console.log(`\n${title}`)
  for (const [k, share] of rows.slice(0, top)) console.log(`${(share * 100).toFixed(2).padStart(6)}%  ${k}`)
}
console.log(`${b.samples} samples of the main thread of ${pid} over ${f.seconds ?? 8} s; perf data in ${data}`)
table('By leaf (system call, native, libc, JIT code), with or without JavaScript on the stack', b.byKind)
table('By nearest JavaScript frame', b.byNearestJs)
table('By JavaScript function anywhere on the stack', b.inclusive)
