/**
 * The conformance runner: the official clients' own test suites, unmodified, against this gateway on
 * each backend. `npx bun conformance/run.ts --help` says how; docs/conformance.md has the last
 * scorecard and how to reproduce it.
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseFlags } from '../bench/lib/args'
import { BUN } from '../bench/lib/processes'
import type { Backend, Plan } from './backend-run'
import { makeRunTls } from './sandbox-host'
import { writeScorecard, type RunSummary } from './scorecard'
import { checkout, installAblyJs, installFromLock, source, type Source } from './sources'
import { filesOf, SUITES, type Tree } from './suites'

const USAGE = `usage: npx bun conformance/run.ts --ably-js <repo> [--chat <repo>] [--ai-transport <repo>] [options]

  --ably-js <repo>      a clone (git clone --recurse-submodules https://github.com/ably/ably-js) or bare mirror
  --ably-js-ref <ref>   for test/rest, test/realtime, delta, LiveObjects (default: the newest release tag)
  --uts-ref <ref>       for test/uts (default: main)
  --ably-common <repo>  the ably-common repository, where the clones lack their submodule
  --chat <repo>         a clone of ably/ably-chat-js; --chat-ref <ref> (default: newest release tag)
  --ai-transport <repo> a clone of ably/ably-ai-transport-js; --ai-transport-ref <ref> (default: newest release tag)
  --suites a,b          of: ${SUITES.map((s) => s.name).join(', ')} (default: all whose repository is given)
  --backends a,b        of: embedded, redis, cluster (default: all three)
  --only <text>         only files whose path contains <text>
  --wall <s>            wall limit per file in seconds (default 600)
  --work <dir>          sources, dependencies and results (default .conformance/, not committed)
  --scorecard           write docs/conformance.md from this run
Each backend runs in its own network namespace (unshare: root, or user namespaces) where only
loopback exists: the gateway answers the hosted sandbox's names there over TLS with a CA made for
the run, and any test that needs the internet fails at once.`

const flags = parseFlags(process.argv.slice(2), {
  'ably-js': 'string',
  'ably-js-ref': 'string',
  'uts-ref': 'string',
  'ably-common': 'string',
  chat: 'string',
  'chat-ref': 'string',
  'ai-transport': 'string',
  'ai-transport-ref': 'string',
  suites: 'string',
  backends: 'string',
  only: 'string',
  wall: 'number',
  work: 'string',
  scorecard: 'boolean',
  help: 'boolean',
})
if (flags.help || (!flags['ably-js'] && !flags.chat && !flags['ai-transport'])) {
  console.log(USAGE)
  process.exit(flags.help ? 0 : 2)
}

const ROOT = resolve(import.meta.dir, '..')
const work = resolve(flags.work ?? join(ROOT, '.conformance'))
mkdirSync(work, { recursive: true })
const backends = (flags.backends ?? 'embedded,redis,cluster').split(',') as Backend[]
for (const b of backends) if (!['embedded', 'redis', 'cluster'].includes(b)) throw new Error(`unknown backend ${b}`)

// Sources: each tree extracted at its ref, dependencies installed (the only step that needs npm's registry).
const trees: Partial<Record<Tree, { root: string; source: Source; client: string }>> = {}
if (flags['ably-js']) {
  for (const [tree, ref] of [
    ['ably-js', flags['ably-js-ref']],
    ['ably-js-main', flags['uts-ref'] ?? 'main'],
  ] as const) {
    const src = source(flags['ably-js'], ref)
    const root = join(work, `ably-js@${src.ref}`)
    checkout(src, root, 'test/common/ably-common', flags['ably-common'])
    trees[tree] = { root, source: src, client: installAblyJs(root, work) }
  }
}
// the SDKs' repositories: each at its ref, installed from its own lock file, run with the ably client it locks
for (const [tree, repo, ref, dir, sdk] of [
  ['chat', flags.chat, flags['chat-ref'], 'ably-chat-js', '@ably/chat'],
  ['ai-transport', flags['ai-transport'], flags['ai-transport-ref'], 'ably-ai-transport-js', '@ably/ai-transport'],
] as const) {
  if (!repo) continue
  const src = source(repo, ref)
  const root = join(work, `${dir}@${src.ref}`)
  checkout(src, root, 'ably-common', flags['ably-common'])
  installFromLock(root)
  const ably = JSON.parse(readFileSync(join(root, 'node_modules/ably/package.json'), 'utf8')).version
  trees[tree] = { root, source: src, client: `${sdk} ${src.ref} with ably ${ably}` }
}

const wanted = flags.suites?.split(',') ?? SUITES.filter((s) => trees[s.tree]).map((s) => s.name)
const suites = SUITES.filter((s) => wanted.includes(s.name))
for (const s of suites)
  if (!trees[s.tree]) throw new Error(`suite ${s.name} needs --${s.tree === 'ably-js-main' ? 'ably-js' : s.tree}`)
const files = suites.flatMap((s) =>
  filesOf(s, trees[s.tree]!.root)
    .filter((f) => !flags.only || f.includes(flags.only))
    .map((file) => ({ suite: s.name, root: trees[s.tree]!.root, file })),
)

const started = new Date().toISOString()
const stamp = started.replace(/[:.]/g, '-')
const out = join(work, 'results', stamp)
mkdirSync(out, { recursive: true })
const tls = makeRunTls(join(work, 'tls'))
const isolate = [
  'unshare',
  '--net',
  '--mount',
  '--propagation',
  'private',
  ...(process.getuid?.() === 0 ? [] : ['--map-root-user']),
]
console.log(`${files.length} files x ${backends.length} backends; results in ${out}`)

for (const backend of backends) {
  const plan: Plan = { backend, tls, files, wallSeconds: flags.wall ?? 600, out }
  const planPath = join(out, `${backend}.plan.json`)
  writeFileSync(planPath, JSON.stringify(plan, null, 1))
  const proc = Bun.spawn([...isolate, BUN, join(import.meta.dir, 'backend-run.ts'), planPath], {
    stdout: 'inherit',
    stderr: 'inherit',
  })
  const code = await proc.exited
  if (code !== 0) console.error(`[${backend}] the run ended with status ${code}`)
}

const summary: RunSummary = {
  date: new Date().toISOString(),
  started,
  gateway: Bun.spawnSync(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD']).stdout.toString().trim(),
  trees: Object.fromEntries(
    Object.entries(trees).map(([t, v]) => [t, { ref: v.source.ref, commit: v.source.commit, client: v.client }]),
  ),
  suites: suites.map((s) => ({ name: s.name, what: s.what })),
  backends: backends
    .filter((b) => existsSync(join(out, `${b}.json`)))
    .map((b) => JSON.parse(readFileSync(join(out, `${b}.json`), 'utf8'))),
}
writeFileSync(join(out, 'summary.json'), JSON.stringify(summary, null, 1))
const card = writeScorecard(summary, flags.scorecard ? join(ROOT, 'docs/conformance.md') : join(out, 'conformance.md'))
console.log(`scorecard: ${card}`)
