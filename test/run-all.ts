/**
 * `npm test`: the three parts of the suite, each whatever the one before gave, then one summary of all.
 * (They are called halves below, from when there were two.)
 *
 * - embedded: `npm run test:embedded` (every test file, on the embedded store);
 * - redis: `npm run test:redis` (the suites that hold a backend, again with TEST_BACKEND=redis);
 * - cluster: `npm run test:cluster` (the same suites on a Redis Cluster of 3 masters and 3
 *   replicas, TEST_BACKEND=redis-cluster).
 *
 * Each half's output is passed through as it comes; its counts are read from bun's own closing
 * summary (` N pass`, ` N fail`, ..., `Ran N tests across M files.`). The last lines are one per half
 * (`embedded: N passed, N failed`, `redis: ...`, `cluster: ...`) and then `tests: N passed, N failed`.
 * The exit status is non-zero when either half failed, or ended without its summary (a crash), or
 * exited non-zero with no failing test (an error outside any test): that half's line says which.
 */
const HALVES = [
  { name: 'embedded', script: 'test:embedded' },
  { name: 'redis', script: 'test:redis' },
  { name: 'cluster', script: 'test:cluster' },
] as const

type Counts = { pass: number; fail: number; skip: number; todo: number; error: number }
type Outcome = { name: string; script: string; code: number; seconds: number; counts?: Counts; failures?: string[] }

/** Keeps the last `max` characters written: bun's summary is at the end. */
function tail(max = 256 * 1024) {
  const decoder = new TextDecoder()
  let text = ''
  return {
    add(chunk: Uint8Array) {
      text += decoder.decode(chunk, { stream: true })
      if (text.length > 2 * max) text = text.slice(-max)
    },
    get text() {
      return text + decoder.decode()
    },
  }
}

/** bun test's closing summary in `text`, or undefined when the run ended without one. */
export function summaryOf(text: string): Counts | undefined {
  const lines = text.replace(/\x1b\[[0-9;]*m/g, '').split('\n')
  const ran = lines.findLastIndex((l) => /^Ran \d+ tests? across \d+ files?\./.test(l.trim()))
  if (ran < 0) return undefined
  const counts: Counts = { pass: 0, fail: 0, skip: 0, todo: 0, error: 0 }
  // the count lines stand right above "Ran N tests across M files."
  for (let i = ran - 1; i >= 0; i--) {
    const m = /^\s*(\d+) (pass|fail|skip|todo|errors?)$/.exec(lines[i]!)
    if (m) counts[m[2]!.startsWith('error') ? 'error' : (m[2] as keyof Counts)] = Number(m[1])
    else if (!/^\s*\d+ (expect\(\) calls|snapshots?.*)$/.test(lines[i]!) && lines[i]!.trim() !== '') break
  }
  return counts
}

async function pipe(from: ReadableStream<Uint8Array>, to: NodeJS.WriteStream, keep: ReturnType<typeof tail>) {
  for await (const chunk of from) {
    keep.add(chunk)
    if (!to.write(chunk)) await new Promise((resolve) => to.once('drain', resolve))
  }
}

async function runHalf(name: string, script: string): Promise<Outcome> {
  console.log(`\n=== ${name}: npm run ${script} ===\n`)
  const started = performance.now()
  const out = tail()
  const err = tail()
  let code: number
  try {
    const proc = Bun.spawn(['npm', 'run', '--silent', script], {
      stdin: 'inherit',
      stdout: 'pipe',
      stderr: 'pipe',
      // piped, bun would drop its colours: keep them for a terminal (the counts are read without them)
      env:
        process.stdout.isTTY && process.env.NO_COLOR === undefined && process.env.FORCE_COLOR === undefined
          ? { ...process.env, FORCE_COLOR: '1' }
          : process.env,
    })
    await Promise.all([pipe(proc.stdout, process.stdout, out), pipe(proc.stderr, process.stderr, err)])
    code = await proc.exited
  } catch (e) {
    console.error(`${name}: could not run npm run ${script}: ${e}`)
    code = 127
  }
  const seconds = (performance.now() - started) / 1000
  const text = err.text + out.text
  return { name, script, code, seconds, counts: summaryOf(err.text) ?? summaryOf(out.text), failures: failuresOf(text) }
}

/** Failing tests a digest names at most (per half), and characters per failure. */
const DIGEST_MAX = 10
const DIGEST_CHARS = 600

/**
 * One line per failing test of bun's output: its name, its error's first lines and where it was
 * thrown, so the last lines of a long run (all a CI log may keep) say why, not only which. Bun
 * prints a failure's source excerpt, `error: ...` and its stack, then `(fail) <name> [<ms>]`.
 */
export function failuresOf(text: string): string[] {
  const lines = text.replace(/\x1b\[[0-9;]*m/g, '').split('\n')
  const out: string[] = []
  // bun lists the failed tests again at its end, with no error: each is named once
  const named = new Set<string>()
  let blockStart = 0
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const verdict = /^\((pass|fail|skip|todo)\) (.*?)(?: \[[\d.]+m?s\])?$/.exec(line)
    if (!verdict) continue
    if (verdict[1] === 'fail' && out.length < DIGEST_MAX && !named.has(verdict[2]!)) {
      named.add(verdict[2]!)
      const block = lines.slice(blockStart, i)
      const e = block.findIndex((l) => l.startsWith('error'))
      const at = block.find((l) => /^\s+at /.test(l))?.trim()
      const message =
        e < 0
          ? 'no error printed'
          : block
              .slice(e, e + 8)
              .filter((l) => l.trim() !== '' && !/^\s+at /.test(l))
              .map((l) => l.trim())
              .join(' ')
      out.push(`${verdict[2]}: ${message}${at ? ` (${at})` : ''}`.slice(0, DIGEST_CHARS))
    }
    blockStart = i + 1
  }
  return out
}

/** `name: N passed, N failed`, and in parentheses what else a reader must know about the half. */
export function describeHalf(o: Outcome): string {
  if (!o.counts) return `${o.name}: did not finish (exited with code ${o.code} without bun's summary; see above)`
  const notes: string[] = []
  if (o.counts.skip) notes.push(`${o.counts.skip} skipped`)
  if (o.counts.todo) notes.push(`${o.counts.todo} todo`)
  if (o.counts.error) notes.push(`${o.counts.error} errors outside tests`)
  if (o.code !== 0 && o.counts.fail === 0) notes.push(`exited with code ${o.code}`)
  notes.push(`${o.seconds.toFixed(0)} s`)
  return `${o.name}: ${o.counts.pass} passed, ${o.counts.fail} failed (${notes.join(', ')})`
}

export const failed = (o: Outcome) => o.code !== 0 || !o.counts || o.counts.fail > 0 || o.counts.error > 0

if (import.meta.main) {
  const outcomes: Outcome[] = []
  for (const { name, script } of HALVES) outcomes.push(await runHalf(name, script))

  const total = (k: 'pass' | 'fail') => outcomes.reduce((n, o) => n + (o.counts?.[k] ?? 0), 0)
  const digest = outcomes.flatMap((o) => (o.failures ?? []).map((f) => `${o.name}: ${f}`))
  if (digest.length) console.log(`\n=== failures ===\n${digest.join('\n')}`)
  console.log('\n=== summary ===')
  for (const o of outcomes) console.log(describeHalf(o))
  const bad = outcomes.filter(failed)
  if (bad.length) console.log(`FAILED: ${bad.map((o) => o.name).join(', ')}`)
  console.log(`tests: ${total('pass')} passed, ${total('fail')} failed`)
  process.exit(bad.length ? 1 : 0)
}
