/**
 * In-process cost of rule routing per publish: `bun bench/rule-routing.ts [--rules 10] [--publishes 200000]`.
 *
 * An app with N http rules whose filters match no published channel (the common case: rules
 * watch a few namespaces, most publishes go elsewhere). Measures RulesEngine.published() plus
 * the routing it starts, per publish, for channels seen recently (the per-channel match cache)
 * and for a new channel every publish (every filter runs: RE2), with 1,000-character channel
 * names as the worst case of the latter. No HTTP, no store: a control store stub answers from
 * memory. Prints one table; asserts nothing.
 */
import { RulesEngine } from '../src/core/rules/rules-engine'
import { WebhookDispatcher } from '../src/core/rules/webhooks'
import type { ControlStore, QueueStore } from '../src/core/ports'
import type { Rule } from '../src/core/types'

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : def
}
const RULES = arg('rules', 10)
const N = arg('publishes', 200_000)

const rule = (i: number, channelFilter: string): Rule => ({
  id: `r${i}`,
  appId: 'app',
  ruleType: 'http',
  requestMode: 'single',
  status: 'enabled',
  source: { channelFilter, type: 'channel.message' },
  target: { url: 'http://hook.test/' },
  created: 0,
  modified: 0,
})

function engineWith(rules: Rule[]): RulesEngine {
  const control = {
    listRules: async () => rules,
    getApp: async () => ({ id: 'app', accountId: 'acct' }),
    listQueues: async () => [],
    onChange: () => () => {},
  } as unknown as ControlStore
  const webhooks = new WebhookDispatcher(
    async () => 200,
    { now: Date.now },
    {
      webhookMaxAttempts: 1,
      webhookRetryMs: 0,
      webhookBufferBytes: 1 << 20,
    },
  )
  return new RulesEngine(control, {} as QueueStore, webhooks, { now: Date.now }, (e) => {
    throw e
  })
}
const typical = engineWith(Array.from({ length: RULES }, (_, i) => rule(i, `^(orders${i}|payments${i}):[a-z]+-\\d+$`)))
// an app at its whole filter budget (MAX_APP_FILTER_PROGRAM) with the costliest kind of filter
const costly = engineWith(Array.from({ length: 5 }, (_, i) => rule(i, `[a-z]{190}${i}`)))
const drafts = [{ id: 'x:0', data: 'hello' }]
const serials = ['01700000000000-000']
const turn = () => new Promise((r) => setImmediate(r))

async function measure(channel: (i: number) => string, n: number, engine = typical): Promise<number> {
  const names = Array.from({ length: n }, (_, i) => channel(i))
  await turn()
  const t0 = performance.now()
  for (let i = 0; i < n; i++) {
    engine.published('app', names[i]!, drafts, serials)
    if ((i & 1023) === 1023) await turn()
  }
  await turn()
  return ((performance.now() - t0) * 1e6) / n
}

typical.published('app', 'warm', drafts, serials)
await turn()
await measure((i) => `news:item-${i % 1000}`, N) // warm-up
const rows = [
  ['recent channels (1,000 names, cached matches)', await measure((i) => `news:item-${i % 1000}`, N)],
  ['a new channel every publish (filters run)', await measure((i) => `fresh:item-${i}`, Math.min(N, 100_000))],
  [
    'a new 1,000-character channel every publish',
    await measure((i) => `${String(i).padStart(8, '0')}${'a'.repeat(992)}`, Math.min(N, 5_000)),
  ],
  [
    'same, app at its filter budget (5 x [a-z]{190})',
    await measure((i) => `${String(i).padStart(8, '0')}${'ab'.repeat(496)}`, Math.min(N, 2_000), costly),
  ],
] as const
console.log(`rule routing, ${RULES} rules (last row: 5), none matching, ns per publish (in process)`)
for (const [what, ns] of rows) console.log(`  ${what.padEnd(48)} ${ns.toFixed(0).padStart(8)} ns`)
