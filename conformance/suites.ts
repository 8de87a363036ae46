/**
 * The suites the runner knows: which tree each comes from, its files, and the command that runs one
 * file (in its own process) with results written where `results.ts` reads them.
 */
import { join } from 'node:path'

/** Where the gateway of a run serves its fault control API (the uts-proxy's default control port). */
export const FAULTS_PORT = 9100

export type Tree = 'ably-js' | 'ably-js-main' | 'chat' | 'ai-transport'
export type Runner = 'mocha' | 'mocha-uts' | 'vitest'

export interface Suite {
  name: string
  tree: Tree
  runner: Runner
  /** Globs under the tree's root, and what to leave out. */
  include: string[]
  exclude?: RegExp
  /** What the suite is, in the scorecard. */
  what: string
  /** vitest: how the repository's configuration for these files is chosen. */
  vitestArgs?: string[]
}

export const SUITES: Suite[] = [
  {
    name: 'rest',
    tree: 'ably-js',
    runner: 'mocha',
    include: ['test/rest/*.test.js'],
    exclude: /liveobjects/,
    what: 'ably-js `test/rest`',
  },
  {
    name: 'realtime',
    tree: 'ably-js',
    runner: 'mocha',
    include: ['test/realtime/*.test.js'],
    exclude: /liveobjects|delta/,
    what: 'ably-js `test/realtime` (WebSocket and comet), without delta and LiveObjects',
  },
  {
    name: 'delta',
    tree: 'ably-js',
    runner: 'mocha',
    include: ['test/realtime/delta.test.js'],
    what: 'ably-js `test/realtime/delta.test.js`',
  },
  {
    name: 'liveobjects',
    tree: 'ably-js',
    runner: 'mocha',
    include: ['test/realtime/liveobjects.test.js', 'test/rest/liveobjects.test.js'],
    what: 'ably-js LiveObjects, realtime and REST',
  },
  {
    name: 'uts',
    tree: 'ably-js-main',
    runner: 'mocha-uts',
    include: ['test/uts/**/integration/**/*.test.ts'],
    exclude: /\/proxy\//,
    what: 'ably-js main, universal test suite `test/uts/**/integration` (without `proxy/`)',
  },
  {
    name: 'uts-proxy',
    tree: 'ably-js-main',
    runner: 'mocha-uts',
    include: ['test/uts/**/integration/proxy/**/*.test.ts'],
    what: "ably-js main, universal test suite's fault tests `test/uts/**/integration/proxy` (the gateway's fault API, FAULTS=on, as their proxy: no proxy program)",
  },
  {
    name: 'chat',
    tree: 'chat',
    runner: 'vitest',
    include: ['test/core/*.integration.test.ts'],
    what: '`@ably/chat` integration (`test/core`)',
    vitestArgs: ['--project', 'chat'],
  },
  {
    name: 'ai-transport',
    tree: 'ai-transport',
    runner: 'vitest',
    include: ['test/**/*.integration.test.ts'],
    what: '`@ably/ai-transport` integration (`test/**/*.integration.test.ts`, its own source against the gateway)',
    vitestArgs: ['--config', 'vitest.config.integration.ts'],
  },
]

export function filesOf(suite: Suite, root: string): string[] {
  const files = new Set<string>()
  for (const pattern of suite.include) for (const f of new Bun.Glob(pattern).scanSync({ cwd: root })) files.add(f)
  return [...files].filter((f) => !suite.exclude?.test(f)).sort()
}

export interface FileCommand {
  cmd: string[]
  env: Record<string, string>
}

/** The command for one file; `results` is where its outcome is written (JSON lines, or vitest's JSON). */
export function commandFor(suite: Suite, root: string, file: string, results: string, sandboxUrl: string): FileCommand {
  const node = Bun.which('node') ?? 'node'
  const reporter = join(import.meta.dir, 'mocha-reporter.cjs')
  const mocha = [node, join(root, 'node_modules/mocha/bin/mocha'), '--exit', '--reporter', reporter]
  switch (suite.runner) {
    case 'mocha':
      return { cmd: [...mocha, file], env: { CONFORMANCE_RESULTS: results, ABLY_LOCAL_SANDBOX_URL: sandboxUrl } }
    case 'mocha-uts':
      // the proxy tests' control host: the gateway's fault API (backend-run.ts starts it on FAULTS_PORT)
      return {
        cmd: [...mocha, '--no-config', '--require', 'tsx/cjs', file],
        env: { CONFORMANCE_RESULTS: results, PROXY_CONTROL_HOST: `http://127.0.0.1:${FAULTS_PORT}` },
      }
    case 'vitest':
      return {
        cmd: [
          node,
          join(root, 'node_modules/vitest/vitest.mjs'),
          'run',
          ...(suite.vitestArgs ?? []),
          file,
          '--reporter=default',
          '--reporter=json',
          `--outputFile.json=${results}`,
        ],
        env: {},
      }
  }
}
