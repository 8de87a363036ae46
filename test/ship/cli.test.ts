import { afterAll, describe, expect, test } from 'bun:test'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SETTINGS } from '../../src/config'
import { VERSION } from '../../src/version'
import { ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { freePort } from '../helpers/redis'

/** The command line as the README runs it: `bun src/main.ts ...` and `npm start`. */
const ROOT = join(import.meta.dir, '..', '..')
const MAIN = join(ROOT, 'src', 'main.ts')
const dirs: string[] = []
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'gw-cli-'))
  dirs.push(d)
  return d
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** Runs main.ts to its end in an empty working dir, with DATA_DIR unset (default ./data). */
function run(args: string[], env: Record<string, string> = {}, cwd = tempDir()) {
  const { DATA_DIR: _, ...inherited } = process.env
  const r = Bun.spawnSync([process.execPath, MAIN, ...args], {
    cwd,
    env: { ...inherited, LOG_LEVEL: 'warn', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString(), cwd }
}

describe('command line (source)', () => {
  test('--help and -h print the usage and every setting', () => {
    for (const flag of ['--help', '-h', 'help']) {
      const r = run([flag])
      expect(r.code).toBe(0)
      expect(r.out).toContain('Usage: gateway')
      for (const s of Object.values(SETTINGS)) expect(r.out).toContain(`\`${s.env}\``)
    }
  })

  test('--version, -V and version print the version and start nothing', () => {
    for (const flag of ['--version', '-V', 'version']) {
      const r = run([flag])
      expect(r.code).toBe(0)
      expect(r.out).toStartWith(`gateway ${VERSION} `)
      expect(readdirSync(r.cwd)).toEqual([])
    }
  })

  test('unknown arguments are refused with the usage (exit 2), before a data dir is created', () => {
    for (const args of [['--bogus'], ['serve'], ['--help', 'extra'], ['-p', '8080']]) {
      const r = run(args)
      expect(r.code).toBe(2)
      expect(r.err).toContain('Usage: gateway')
      expect(r.out).toBe('')
      expect(existsSync(join(r.cwd, 'data'))).toBe(false)
    }
  })

  test('a taken port fails the start before any credential is created; the next start shows them', async () => {
    const taken = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('busy') })
    try {
      const dataDir = tempDir()
      const failed = run([], { PORT: String(taken.port), HOST: '127.0.0.1', DATA_DIR: dataDir })
      expect(failed.code).toBe(1)
      expect(failed.err).toContain(`cannot listen on 127.0.0.1:${taken.port}`)
      expect(failed.out).not.toContain('Bootstrap credentials')
      // the same data dir on a free port: a fresh store, so the credentials are created and shown now
      const node = await GatewayNode.start({ DATA_DIR: dataDir, BOOTSTRAP_KEY: '' })
      try {
        expect(node.log).toContain('Bootstrap credentials (shown once)')
        expect(node.log).toMatch(/key: +\w+\.\w+:\w+/)
      } finally {
        await node.stop()
      }
    } finally {
      taken.stop(true)
    }
  })

  test.skipIf(process.platform !== 'linux')(
    "a start begins again in the same process with the allocator's purge delay, keeping Bun's flags and the arguments",
    async () => {
      const environ = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0')
      const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').filter(Boolean)
      for (const [env, want] of [
        [{}, '-1'],
        [{ MEMORY_PURGE_DELAY_MS: '50' }, '50'],
      ] as const) {
        // started as `bun --smol src/main.ts`: the process it was started as serves (its pid answers)
        const node = await GatewayNode.start(env, { cmd: [process.execPath, '--smol', MAIN] })
        try {
          expect((await fetch(`${node.url}/health`)).status).toBe(200)
          expect(environ(node.pid!)).toContain(`MIMALLOC_PURGE_DELAY=${want}`)
          expect(cmdline(node.pid!)).toEqual([process.execPath, '--smol', MAIN])
        } finally {
          await node.stop()
        }
      }
    },
  )

  test.skipIf(process.platform !== 'linux')(
    'a start under the CPU profiler is not begun again (its sampling signal could reach the new program first), and says so',
    async () => {
      const profiles = tempDir()
      const node = await GatewayNode.start(
        {},
        { cmd: [process.execPath, '--cpu-prof', `--cpu-prof-dir=${profiles}`, MAIN] },
      )
      try {
        expect((await fetch(`${node.url}/health`)).status).toBe(200)
        expect(readFileSync(`/proc/${node.pid}/environ`, 'latin1')).not.toContain('MIMALLOC_PURGE_DELAY=')
        expect(node.log).toContain("not begun again for the allocator's settings under --cpu-prof")
      } finally {
        await node.stop()
      }
    },
  )

  test('healthcheck exits 0 against a running node and 1 when nothing answers', async () => {
    const node = await GatewayNode.start({})
    try {
      expect(run(['healthcheck'], { PORT: String(node.port), HOST: '0.0.0.0' }).code).toBe(0)
    } finally {
      await node.stop()
    }
    const closed = run(['healthcheck'], { PORT: String(await freePort()) })
    expect(closed.code).toBe(1)
    expect(closed.err).toContain('healthcheck:')
  })
})

test('npm start stopped by SIGTERM to its PID leaves no server behind', async () => {
  const npm = Bun.which('npm')
  expect(npm).not.toBeNull()
  const port = await freePort()
  const proc = spawn(npm!, ['start', '--silent'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: tempDir(),
      BOOTSTRAP_KEY: ROOT_KEY,
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  })
  const exited = new Promise<void>((r) => proc.once('exit', () => r()))
  let up = false
  for (let i = 0; i < 200 && !up; i++) {
    up = await fetch(`http://127.0.0.1:${port}/ready`).then(
      (r) => r.status === 200,
      () => false,
    )
    if (!up) await Bun.sleep(50)
  }
  expect(up).toBe(true)
  proc.kill('SIGTERM')
  await exited
  // the server got the signal too: within a few seconds nothing answers on its port
  let gone = false
  for (let i = 0; i < 100 && !gone; i++) {
    gone = await fetch(`http://127.0.0.1:${port}/health`).then(
      () => false,
      () => true,
    )
    if (!gone) await Bun.sleep(50)
  }
  expect(gone).toBe(true)
}, 30_000)
