/**
 * A private redis-server for the Redis variants of the scenarios: started on a free port with no
 * persistence (`--save '' --appendonly no`), tracked and stopped like every other child, so a run
 * never touches (or depends on) a Redis someone else uses.
 */
import { join } from 'node:path'
import { freePort, spawnTracked, stopProcess } from './processes'

export interface RedisServer {
  url: string
  pid: number
  stop(): Promise<void>
}

export interface RedisStartOptions {
  /** A command that runs redis-server (e.g. valgrind and its options): redis-server is its last argument. */
  wrapper?: string[]
  /** How long it may take to answer PING (ms). */
  startMs?: number
}

export async function startRedis(logDir: string, name = 'redis', o: RedisStartOptions = {}): Promise<RedisServer> {
  const bin = Bun.which('redis-server')
  if (!bin)
    throw new Error(
      'redis-server not found on PATH: the --redis variants start their own (apt-get install redis-server)',
    )
  const port = freePort()
  const proc = spawnTracked(
    [
      ...(o.wrapper ?? []),
      bin,
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--protected-mode',
      'no',
    ],
    {
      stdout: join(logDir, `${name}.log`),
      stderr: join(logDir, `${name}.err.log`),
    },
  )
  const startMs = o.startMs ?? 10_000
  const until = Date.now() + startMs
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`redis-server exited (${proc.exitCode}); see ${logDir}/${name}.log`)
    if (await ping(port)) break
    if (Date.now() > until) {
      await stopProcess(proc)
      throw new Error(`redis-server on port ${port} did not answer PING within ${startMs / 1000} s`)
    }
    await Bun.sleep(50)
  }
  return { url: `redis://127.0.0.1:${port}`, pid: proc.pid, stop: () => stopProcess(proc) }
}

/** True when a RESP PING on `port` is answered +PONG. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), 500)
    Bun.connect({
      hostname: '127.0.0.1',
      port,
      socket: {
        open(s) {
          s.write('PING\r\n')
        },
        data(s, d) {
          clearTimeout(timer)
          resolve(d.toString().startsWith('+PONG'))
          s.end()
        },
        error() {
          clearTimeout(timer)
          resolve(false)
        },
        connectError() {
          clearTimeout(timer)
          resolve(false)
        },
      },
    }).catch(() => {
      clearTimeout(timer)
      resolve(false)
    })
  })
}
