/**
 * `gateway sandbox` (issue 45) as a subprocess, from the source and as the compiled binary: it
 * starts on a free or given port, prints where it listens (ABLY_LOCAL_SANDBOX_URL, the key, the
 * fault control host), serves a provisioned app to the official client, and stops on SIGTERM
 * leaving nothing behind (its temporary directory removed, its ports closed).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as Ably from 'ably'
import { BINARY, ensureBinary } from '../helpers/binary'
import { freePort } from '../helpers/redis'
import { provisionApp } from '../helpers/sandbox'

const ROOT = join(import.meta.dir, '..', '..')

interface Sandbox {
  proc: ChildProcess
  vars: Record<string, string>
  tmp: string
  exited: Promise<{ code: number | null; signal: string | null }>
}

/** Starts `<cmd> sandbox <args>` with its own TMPDIR; resolves once it printed `until`. */
async function start(cmd: string[], args: string[], until: string): Promise<Sandbox> {
  const tmp = mkdtempSync(join(tmpdir(), 'gw-sandbox-test-'))
  const env: Record<string, string | undefined> = { ...process.env, TMPDIR: tmp, PORT: '1', DATA_DIR: '/nonexistent' }
  delete env.LOG_LEVEL
  delete env.REDIS_URL
  const proc = spawn(cmd[0]!, [...cmd.slice(1), 'sandbox', ...args], {
    cwd: tmp,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const exited = new Promise<{ code: number | null; signal: string | null }>((r) =>
    proc.on('exit', (code, signal) => r({ code, signal })),
  )
  let out = ''
  let err = ''
  proc.stderr!.on('data', (d) => (err += d))
  const vars = await new Promise<Record<string, string>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${until} in 20 s: ${out} ${err}`)), 20_000)
    proc.stdout!.on('data', (d) => {
      out += d
      if (!out.includes(`${until}=`) || !out.slice(out.indexOf(`${until}=`)).includes('\n')) return
      clearTimeout(timer)
      resolve(
        Object.fromEntries(
          out
            .trim()
            .split('\n')
            .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
        ),
      )
    })
    void exited.then(() => reject(new Error(`exited: ${out} ${err}`)))
  })
  return { proc, vars, tmp, exited }
}

/** SIGTERM: exit 0, the temporary directory empty, the ports closed. */
async function stop(s: Sandbox, urls: string[]) {
  s.proc.kill('SIGTERM')
  expect(await s.exited).toEqual({ code: 0, signal: null })
  expect(readdirSync(s.tmp)).toEqual([])
  for (const url of urls)
    await fetch(url + '/health').then(
      () => expect.unreachable(`${url} still answers`),
      () => {},
    )
  rmSync(s.tmp, { recursive: true, force: true })
}

const variants: Array<[string, () => string[]]> = [
  ['from the source', () => [process.execPath, join(ROOT, 'src/main.ts')]],
  ['as the compiled binary', () => [BINARY]],
]

for (const [how, cmd] of variants) {
  describe(`gateway sandbox, ${how}`, () => {
    if (how.includes('binary')) beforeAll(() => ensureBinary(), 120_000)
    const left: Sandbox[] = []
    afterAll(() => {
      for (const s of left) s.proc.kill('SIGKILL')
    })

    test('a free port, a provisioned app served to the official client, the fault API, SIGTERM leaves nothing', async () => {
      const s = await start(cmd(), ['--faults', '--faults-port', '0'], 'PROXY_CONTROL_HOST')
      left.push(s)
      const base = s.vars.ABLY_LOCAL_SANDBOX_URL!
      expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      expect(s.vars.ABLY_KEY).toMatch(/^[^.]+\.[^:]+:.+$/)
      expect(readdirSync(s.tmp).filter((f) => f.startsWith('gateway-sandbox-'))).toHaveLength(1)
      const app = await provisionApp(base)
      const rest = new Ably.Rest({
        key: app.keys[0]!.keyStr,
        endpoint: '127.0.0.1',
        port: app.port,
        tls: false,
        logLevel: 0,
      })
      await rest.channels.get('sandbox').publish('m', 'served')
      expect((await rest.channels.get('sandbox').history()).items.map((m) => m.data)).toEqual(['served'])
      // rate limits off: one publish of more messages than a second's default budget (2,000) is served
      const batch = Array.from({ length: 1000 }, (_, i) => ({ name: 'b', data: String(i) }))
      for (let i = 0; i < 3; i++) await rest.channels.get('burst').publish(batch)
      const control = s.vars.PROXY_CONTROL_HOST!
      expect(await (await fetch(control + '/health')).json()).toEqual({ ok: true })
      await stop(s, [base, control])
    })

    test('a given port; no fault API unless asked', async () => {
      const port = await freePort()
      const s = await start(cmd(), ['--port', String(port)], 'ABLY_KEY')
      left.push(s)
      expect(s.vars.ABLY_LOCAL_SANDBOX_URL).toBe(`http://127.0.0.1:${port}`)
      expect(s.vars.PROXY_CONTROL_HOST).toBeUndefined()
      expect((await fetch(`http://127.0.0.1:${port}/ready`)).status).toBe(200)
      await stop(s, [`http://127.0.0.1:${port}`])
    })
  })
}

test('sandbox options are checked before anything starts (exit 2)', () => {
  const r = Bun.spawnSync([process.execPath, join(ROOT, 'src/main.ts'), 'sandbox', '--port', 'x'], { stderr: 'pipe' })
  expect(r.exitCode).toBe(2)
  expect(r.stderr.toString()).toContain('--port needs a port number')
})
