/** What one file's run left behind, read into counts and failures. */
import { existsSync, readFileSync } from 'node:fs'
import { ECHO_ADDRESS, ECHO_HOSTS } from './echo-server'
import { SANDBOX_HOSTS } from './sandbox-host'
import type { Runner } from './suites'

export interface Failure {
  title: string
  error: string
  /** Hosts outside the run that the test's own log (the client's log lines printed for it) names. */
  outside?: string[]
}

export interface FileResult {
  file: string
  passed: number
  failed: number
  skipped: number
  /** Tests the file declared that never reported (cut by the wall limit, or behind a failed hook). */
  notRun: number
  /** Passed and failed by protocol where a test's title names it (binary/msgpack, text/json). */
  byProtocol: Record<'json' | 'msgpack', { passed: number; failed: number }>
  failures: Failure[]
  /** 'timed out' (the wall limit), 'crashed' (ended before reporting its end), or 'ok'. */
  ending: 'ok' | 'timed out' | 'crashed'
  seconds: number
}

function protocolOf(title: string): 'json' | 'msgpack' | undefined {
  if (/\b(binary protocol|msgpack)\b/i.test(title)) return 'msgpack'
  if (/\b(text protocol|json)\b/i.test(title)) return 'json'
}

function tally(r: FileResult, title: string, ok: boolean): void {
  const p = protocolOf(title)
  if (p) r.byProtocol[p][ok ? 'passed' : 'failed']++
}

/**
 * Hosts the suites name that are this run's own (the gateway, the stand-in for the test-support
 * hosts of echo-server.ts) or no host at all (help links).
 */
const OWN_HOSTS = new Set(['localhost', '127.0.0.1', 'help.ably.io', ...SANDBOX_HOSTS, ECHO_ADDRESS, ...ECHO_HOSTS])
const isOwnHost = (h: string) => OWN_HOSTS.has(h) || h.endsWith('.fallback.ably-realtime-nonprod.com')

/**
 * The hosts outside the run named in each failed test's part of the file's log (the reporter's
 * `FAIL  <title>` line up to the next test's line): what a test reached for that the run cannot give.
 */
function outsideHosts(log: string, failures: Failure[]): void {
  const lines = log.split('\n')
  for (const f of failures) {
    const at = lines.findIndex((l) => l.startsWith(`  FAIL  ${f.title}`))
    if (at < 0) continue
    const hosts = new Set<string>()
    for (let i = at; i < lines.length && (i === at || !/^  (ok|FAIL)  /.test(lines[i]!)); i++)
      for (const m of lines[i]!.matchAll(/\b(?:https?|wss?):\/\/([a-z0-9.-]+)/gi))
        if (!isOwnHost(m[1]!)) hosts.add(m[1]!)
    if (hosts.size) f.outside = [...hosts]
  }
}

export function readResults(
  runner: Runner,
  path: string,
  file: string,
  timedOut: boolean,
  seconds: number,
  logPath?: string,
): FileResult {
  const r: FileResult = {
    file,
    passed: 0,
    failed: 0,
    skipped: 0,
    notRun: 0,
    byProtocol: { json: { passed: 0, failed: 0 }, msgpack: { passed: 0, failed: 0 } },
    failures: [],
    ending: timedOut ? 'timed out' : 'ok',
    seconds,
  }
  if (!existsSync(path)) {
    if (!timedOut) r.ending = 'crashed'
    return r
  }
  const text = readFileSync(path, 'utf8')
  if (runner === 'vitest') {
    const doc = JSON.parse(text) as {
      testResults: Array<{ assertionResults: Array<{ fullName: string; status: string; failureMessages?: string[] }> }>
    }
    for (const f of doc.testResults)
      for (const a of f.assertionResults) {
        if (a.status === 'passed') r.passed++
        else if (a.status === 'failed') {
          r.failed++
          r.failures.push({ title: a.fullName, error: (a.failureMessages ?? []).join('\n').slice(0, 600) })
        } else r.skipped++
        if (a.status === 'passed' || a.status === 'failed') tally(r, a.fullName, a.status === 'passed')
      }
    return r
  }
  let total = 0
  let ended = false
  for (const line of text.split('\n')) {
    if (!line) continue
    const e = JSON.parse(line) as { event: string; total?: number; title?: string; error?: string; hook?: boolean }
    if (e.event === 'start') total = e.total ?? 0
    else if (e.event === 'pass') {
      r.passed++
      tally(r, e.title!, true)
    } else if (e.event === 'fail') {
      r.failures.push({ title: e.title!, error: e.error ?? '' })
      if (!e.hook) {
        r.failed++
        tally(r, e.title!, false)
      }
    } else if (e.event === 'pending') r.skipped++
    else if (e.event === 'end') ended = true
  }
  r.notRun = Math.max(0, total - r.passed - r.failed - r.skipped)
  if (!ended && !timedOut) r.ending = 'crashed'
  if (logPath && existsSync(logPath) && r.failures.length) outsideHosts(readFileSync(logPath, 'utf8'), r.failures)
  return r
}
