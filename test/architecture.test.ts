import { expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { ERROR_CODES } from '../src/errors/codes'

const SRC = join(import.meta.dir, '..', 'src')

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : []
  })
}

interface Source {
  /** Path relative to src, e.g. `core/auth/capability.ts`. */
  rel: string
  text: string
  /** Relative imports, resolved to paths relative to src (with `.ts`). */
  imports: string[]
  packages: string[]
}

/** A relative import as a path relative to src: `x.ts`, or a folder's `x/index.ts`. */
function resolve(path: string): string {
  const p = path.replace(/\.ts$/, '')
  return relative(SRC, existsSync(p + '.ts') || !existsSync(join(p, 'index.ts')) ? p + '.ts' : join(p, 'index.ts'))
}

const sources: Source[] = files(SRC).map((file) => {
  const rel = relative(SRC, file)
  const text = readFileSync(file, 'utf8')
  const imports: string[] = []
  const packages: string[] = []
  for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)) {
    const spec = m[1]!
    if (spec.startsWith('.')) imports.push(resolve(join(dirname(file), spec)))
    else packages.push(spec)
  }
  return { rel, text, imports, packages }
})

const areaOf = (rel: string) => (rel.includes('/') ? rel.split('/')[0]! : 'root')

/** Which top-level areas each area may import (architecture doc: import direction). */
const ALLOWED: Record<string, string[]> = {
  lib: ['lib'],
  errors: ['errors', 'lib'],
  config: ['config', 'errors', 'lib'],
  core: ['core', 'errors', 'lib'],
  backend: ['backend', 'core', 'errors', 'lib'],
  api: ['api', 'core', 'errors', 'lib'],
}
const FORBIDDEN_PACKAGES: Record<string, string[]> = {
  core: ['elysia', 'redis', 'msgpackr', 'bun:sqlite', 'bun', 'amqplib'],
}

/** Root files: `main.ts` is the composition root and may import anything; the others never reach a backend. */
const ROOT_COMPOSITION = new Set(['main.ts', 'node.ts'])

test('imports follow the architecture direction', () => {
  const problems: string[] = []
  for (const s of sources) {
    const area = areaOf(s.rel)
    for (const target of s.imports) {
      const targetArea = areaOf(target)
      if (area === 'root') {
        if (!ROOT_COMPOSITION.has(s.rel) && targetArea === 'backend') problems.push(`${s.rel} imports ${target}`)
      } else if (!ALLOWED[area]!.includes(targetArea)) problems.push(`${s.rel} imports ${target}`)
    }
    for (const spec of s.packages) {
      if (FORBIDDEN_PACKAGES[area]?.some((p) => spec === p || spec.startsWith(p + '/')))
        problems.push(`${s.rel} imports package ${spec}`)
    }
    if (area !== 'config' && /process\.env/.test(s.text)) problems.push(`${s.rel} reads process.env (only config may)`)
  }
  expect(problems).toEqual([])
})

test('the API reaches storage only through the core (no core.backend, no backend at run time)', () => {
  const problems = sources
    .filter((s) => areaOf(s.rel) === 'api' && /\bcore\.backend\b|\.backend\./.test(s.text))
    .map((s) => s.rel)
  expect(problems).toEqual([])
})

test('the two backends are independent of each other (shared code lives in backend/shared)', () => {
  const problems: string[] = []
  for (const s of sources) {
    const [area, sub] = s.rel.split('/')
    if (area !== 'backend' || (sub !== 'memory' && sub !== 'redis')) continue
    const other = sub === 'memory' ? 'backend/redis/' : 'backend/memory/'
    for (const t of s.imports) if (t.startsWith(other)) problems.push(`${s.rel} imports ${t}`)
  }
  expect(problems).toEqual([])
})

test('the AMQP queue adapter stands beside both backends (it imports neither, and only it imports amqplib)', () => {
  const problems: string[] = []
  for (const s of sources) {
    const inAmqp = s.rel.startsWith('backend/amqp/')
    if (inAmqp)
      for (const t of s.imports)
        if (t.startsWith('backend/memory/') || t.startsWith('backend/redis/')) problems.push(`${s.rel} imports ${t}`)
    if (!inAmqp && s.packages.some((p) => p === 'amqplib')) problems.push(`${s.rel} imports amqplib`)
  }
  expect(problems).toEqual([])
})

test('the core uses no runtime globals of Bun or Node (time, timers, bytes and I/O come through ports and lib)', () => {
  const problems = sources
    .filter((s) => areaOf(s.rel) === 'core' && /\bBun\.|\bBuffer\b|\bprocess\./.test(codeOf(s)))
    .map((s) => s.rel)
  expect(problems).toEqual([])
})

/** A source without its comments. */
const codeOf = (s: Source) => s.text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '')

test('the core reads the time only from its Clock and schedules only through its Timers (ports.ts): timers and turns', () => {
  const problems = sources
    .filter(
      (s) =>
        areaOf(s.rel) === 'core' &&
        /\bDate\.now\(|new Date\(\s*\)|\bperformance\.now\(|\b(set|clear)(Timeout|Interval|Immediate)\(/.test(
          codeOf(s),
        ),
    )
    .map((s) => `${s.rel} reads the time or sets timers itself`)
  expect(problems).toEqual([])
})

test('the core does not describe the backend: it states the ports it takes (CorePorts), the backend gives them', () => {
  const problems = sources
    .filter((s) => areaOf(s.rel) === 'core' && /\binterface Backend\b|\btype Backend\b/.test(codeOf(s)))
    .map((s) => s.rel)
  expect(problems).toEqual([])
})

test('the Broker port has no optional member (a capability a broker may lack is a port of its own, found at start)', () => {
  const ports = sources.find((s) => s.rel === 'core/ports.ts')!
  const body = /export interface Broker \{([\s\S]*?)\n\}/.exec(codeOf(ports))?.[1]
  expect(body).toBeDefined()
  const optional = [...body!.matchAll(/^\s*(?:readonly\s+)?(\w+)\?\s*[(:]/gm)].map((m) => m[1])
  expect(optional).toEqual([])
})

/** A module that defines a concrete broker class (one implementing the Broker port). */
const brokerModules = sources.filter((s) => /\bclass \w+ implements [^{]*\bBroker\b/.test(s.text)).map((s) => s.rel)

test('no concrete broker is imported outside backend/, and within a backend only by its composition (index.ts)', () => {
  expect(brokerModules.length).toBeGreaterThanOrEqual(2)
  const problems: string[] = []
  for (const s of sources)
    for (const t of s.imports) {
      if (!brokerModules.includes(t)) continue
      const home = t.split('/').slice(0, 2).join('/')
      if (s.rel !== `${home}/index.ts`) problems.push(`${s.rel} imports ${t}`)
    }
  expect(problems).toEqual([])
})

test("on Redis, a channel log's entries and notifications are written by one Lua fragment (lua/log.ts), composed into each script that appends", () => {
  const problems = sources
    .filter(
      (s) =>
        s.rel.startsWith('backend/redis/') &&
        s.rel !== 'backend/redis/lua/log.ts' &&
        /'SPUBLISH'|'XADD'[^\n]*'\*', 'm'/.test(s.text),
    )
    .map((s) => s.rel)
  expect(problems).toEqual([])
})

test('the Redis backend keeps one presence layout (the interim layout of `{pc}`, legacyPresence*, is gone)', () => {
  const problems = sources.filter((s) => /legacyPresence|\{pc\}/.test(codeOf(s))).map((s) => s.rel)
  expect(problems).toEqual([])
})

test('the Redis backend keeps its Lua in one folder (backend/redis/lua/) and types replies by its one call, without casts', () => {
  const problems: string[] = []
  for (const s of sources) {
    if (!s.rel.startsWith('backend/redis/')) continue
    if (!s.rel.startsWith('backend/redis/lua/') && /redis\.p?call\(/.test(s.text)) problems.push(`${s.rel} holds Lua`)
    if (/\bas unknown as\b/.test(codeOf(s))) problems.push(`${s.rel} casts a reply (as unknown as)`)
  }
  expect(problems).toEqual([])
})

test("the broker's synchronous append is looked up once, by the publisher (one publish entry in core)", () => {
  const problems = sources
    .filter(
      (s) => areaOf(s.rel) === 'core' && s.rel !== 'core/channels/publisher.ts' && /\.publishNow\b/.test(codeOf(s)),
    )
    .map((s) => s.rel)
  expect(problems).toEqual([])
})

/**
 * The layers of the core, lowest first: a folder imports only folders before it (and itself).
 * The root files `types.ts`, `ports.ts` and every folder's `ports.ts` are below all of them;
 * `index.ts` (the composition of the services) is above all of them.
 */
const CORE_LAYERS = [
  'limits',
  'stats',
  'auth',
  'model',
  'control',
  'rules',
  'fanout',
  'presence',
  'channels',
  'objects',
  'chat',
  'push',
  'connections',
]

const isCorePort = (rel: string) => rel === 'core/types.ts' || rel === 'core/ports.ts' || rel.endsWith('/ports.ts')

test('no import runs back up the layers of the core', () => {
  const problems: string[] = []
  const rank = (rel: string): number => {
    if (isCorePort(rel)) return -1
    if (rel === 'core/index.ts') return CORE_LAYERS.length
    const folder = rel.split('/')[1]!
    const r = CORE_LAYERS.indexOf(folder)
    if (r < 0) problems.push(`core folder ${folder} is not in CORE_LAYERS`)
    return r
  }
  for (const s of sources) {
    if (areaOf(s.rel) !== 'core') continue
    const from = rank(s.rel)
    for (const t of s.imports) {
      if (areaOf(t) !== 'core') continue
      if (isCorePort(s.rel) && !isCorePort(t)) problems.push(`port ${s.rel} imports ${t}`)
      else if (rank(t) > from) problems.push(`${s.rel} imports ${t} (a higher layer)`)
    }
  }
  expect([...new Set(problems)]).toEqual([])
})

test('no import circles anywhere in src', () => {
  const graph = new Map(sources.map((s) => [s.rel, s.imports.filter((t) => t !== s.rel)]))
  const state = new Map<string, 'open' | 'done'>()
  const circles: string[] = []
  const visit = (node: string, path: string[]) => {
    if (state.get(node) === 'done') return
    if (state.get(node) === 'open') {
      circles.push([...path.slice(path.indexOf(node)), node].join(' -> '))
      return
    }
    state.set(node, 'open')
    for (const next of graph.get(node) ?? []) visit(next, [...path, node])
    state.set(node, 'done')
  }
  for (const node of graph.keys()) visit(node, [])
  expect(circles).toEqual([])
})

test('Elysia handlers and hooks destructure their context (one that takes it whole makes every response rebuilt)', () => {
  // Elysia prepares what a function reads of its context; a context passed on whole counts as all
  // of it, cookies included, and then every Response the route returns is rebuilt around its body
  // (an event stream kept the rebuilt Response's Headers object for its life: ~1.5 KB a stream)
  const whole =
    /\.(?:get|post|put|patch|delete|all|on[A-Z]\w*)\(\s*(?:'[^']*',\s*|\{[^}]*\},\s*)?(?:async\s+)?\(?\s*([A-Za-z_]\w*)\s*\)?\s*=>/g
  const problems = sources
    .filter((s) => areaOf(s.rel) === 'api' || s.rel === 'server.ts')
    .flatMap((s) => [...s.text.matchAll(whole)].map((m) => `${s.rel}: ${m[0]}`))
  expect(problems).toEqual([])
})

test('the realtime connection in core knows no runtime, socket or wire format (it speaks through the Transport port)', () => {
  const problems: string[] = []
  for (const s of sources) {
    if (!s.rel.startsWith('core/connections/')) continue
    for (const p of s.packages) problems.push(`${s.rel} imports package ${p}`)
    for (const t of s.imports)
      if (!/^(core|errors|lib)\//.test(t) || t.startsWith('lib/http')) problems.push(`${s.rel} imports ${t}`)
    if (
      /\bServerWebSocket\b|\bWebSocket\b|\bBuffer\b|JSON\.stringify|msgpack/.test(
        s.text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, ''),
      )
    )
      problems.push(`${s.rel} handles sockets or frames`)
  }
  expect(problems).toEqual([])
})

test('the realtime operations are answered through one skeleton: only core/connections/operations.ts opens, ACKs or NACKs an answer slot', () => {
  const problems = sources
    .filter(
      (s) =>
        areaOf(s.rel) === 'core' &&
        s.rel !== 'core/connections/operations.ts' &&
        s.rel !== 'core/connections/acks.ts' &&
        /\backs\.(open|ack|nack|earlier)\(/.test(codeOf(s)),
    )
    .map((s) => `${s.rel} answers an operation itself (describe it as an Operation: operations.ts)`)
  expect(problems).toEqual([])
})

test('ATTACH decides its start, then runs what features register: attachNew stays short and names no feature', () => {
  const ops = sources.find((s) => s.rel === 'core/connections/channel-ops.ts')!
  const body = /\n {2}private async attachNew\([\s\S]*?\n {2}\}\n/.exec(codeOf(ops))?.[0] ?? ''
  expect(body).not.toBe('')
  expect(body.trim().split('\n').length).toBeLessThan(40)
  // presence, LiveObjects and occupancy are steps (attach-steps.ts), deltas, filters and held
  // entries stages (attachment-stages.ts): neither is named in the attach itself
  expect(body.match(/presence|object|occupancy|delta|filter|held|rewind|Flag\./gi) ?? []).toEqual([])
  expect(ops.imports.filter((t) => /^core\/fanout\/|object-ops|occupancy-ops/.test(t))).toEqual([])
})

test("the realtime transports (WebSocket and comet, api/realtime/) reach the core only through the connection's public surface (core/connections/index.ts)", () => {
  const problems: string[] = []
  expect(sources.filter((s) => s.rel.startsWith('api/realtime/')).map((s) => s.rel)).toContain('api/realtime/comet.ts')
  for (const s of sources) {
    if (!s.rel.startsWith('api/realtime/')) continue
    for (const t of s.imports)
      if (t.startsWith('core/') && t !== 'core/connections/index.ts') problems.push(`${s.rel} imports ${t}`)
  }
  expect(problems).toEqual([])
})

test('api/plugins holds only Elysia instances: each file imports elysia and constructs one', () => {
  const problems: string[] = []
  for (const s of sources) {
    if (!s.rel.startsWith('api/plugins/')) continue
    if (!s.packages.includes('elysia')) problems.push(`${s.rel} imports no elysia`)
    if (!/\bnew Elysia\(/.test(s.text)) problems.push(`${s.rel} constructs no Elysia instance`)
  }
  expect(problems).toEqual([])
})

test('api/http (HTTP helpers) and api/wire (wire forms) import no Elysia and no plugin', () => {
  const problems: string[] = []
  for (const s of sources) {
    if (!s.rel.startsWith('api/http/') && !s.rel.startsWith('api/wire/')) continue
    for (const p of s.packages) if (p === 'elysia' || p.startsWith('elysia/')) problems.push(`${s.rel} imports ${p}`)
    for (const t of s.imports) if (t.startsWith('api/plugins/')) problems.push(`${s.rel} imports ${t}`)
  }
  expect(problems).toEqual([])
})

test('src/api keeps no loose helpers: its own files are Elysia route modules or the route schemas', () => {
  const problems = sources
    .filter((s) => /^api\/[^/]+\.ts$/.test(s.rel) && s.rel !== 'api/schemas.ts' && !/\bnew Elysia\(/.test(s.text))
    .map((s) => s.rel)
  expect(problems).toEqual([])
})

/** The `new GatewayError(...)` calls of a source: their text and line. */
function gatewayErrors(text: string): Array<{ call: string; line: number }> {
  const out: Array<{ call: string; line: number }> = []
  for (const m of text.matchAll(/new GatewayError\(/g)) {
    let i = m.index! + m[0].length
    let depth = 1
    let quote: string | undefined
    for (; i < text.length && depth > 0; i++) {
      const c = text[i]!
      if (quote) {
        if (c === '\\') i++
        else if (c === quote) quote = undefined
      } else if (c === "'" || c === '"' || c === '`') quote = c
      else if ('({['.includes(c)) depth++
      else if (')}]'.includes(c)) depth--
    }
    out.push({ call: text.slice(m.index!, i), line: text.slice(0, m.index!).split('\n').length })
  }
  return out
}

test('an error states its status only where it differs from the code table (src/errors/codes.ts), and says why', () => {
  const problems: string[] = []
  for (const s of sources) {
    const lines = s.text.split('\n')
    for (const { call, line } of gatewayErrors(s.text)) {
      const status = /\{\s*status:\s*(\d+)\s*,?\s*\}\s*,?\s*\)$/.exec(call)?.[1]
      if (!status) continue
      const code = /^new GatewayError\(\s*(\d+)\b/.exec(call)?.[1]
      const table = code ? ERROR_CODES[Number(code) as keyof typeof ERROR_CODES]?.status : undefined
      if (table === Number(status)) problems.push(`${s.rel}:${line} restates ${code}'s status ${status}`)
      else if (!lines.slice(Math.max(0, line - 4), line).some((l) => /\/\/|\/?\*/.test(l)))
        problems.push(`${s.rel}:${line} overrides ${code ?? 'a code'}'s status with ${status} and says not why`)
    }
  }
  expect(problems).toEqual([])
})
