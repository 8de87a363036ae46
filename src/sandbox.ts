import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SandboxOptions } from './cli'
import { loadSandboxConfig } from './config'
import { flushLogs } from './lib/logger'
import { createNode } from './node'

/**
 * `gateway sandbox`: a throwaway gateway for one test run. A fresh embedded store in a temporary
 * directory, sandbox provisioning on (`POST /apps`), rate limits off unless asked, on loopback and
 * a free port unless given; the fault control API with --faults. Prints where it listens as
 * `NAME=value` lines (the official clients' local-sandbox setting, the root key, the fault control
 * host), the form a shell `eval`, a CI job's env file or the suites read; stops on SIGTERM or
 * SIGINT and removes its directory: nothing is left behind.
 */
export async function sandbox(o: SandboxOptions): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gateway-sandbox-'))
  const remove = () => rmSync(dataDir, { recursive: true, force: true })
  try {
    // quiet and on loopback unless the environment says otherwise: the lines printed are the output
    const config = loadSandboxConfig({
      port: o.port ?? 0,
      dataDir,
      // a fresh store: the embedded one, whatever REDIS_URL says
      redisUrl: '',
      redisCluster: false,
      workers: 1,
      reusePort: false,
      sandboxProvisioning: true,
      ...(o.rateLimits ? { rateLimits: true } : {}),
      ...(o.faults ? { faults: true } : {}),
      ...(o.faultsPort !== undefined ? { faultsPort: o.faultsPort } : {}),
    })
    const node = await createNode(config)
    const server = node.listen()
    const boot = await node.bootstrap()
    const wildcard = config.host === '0.0.0.0' || config.host === '::'
    const host = wildcard ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host
    const lines = [
      `ABLY_LOCAL_SANDBOX_URL=${config.tlsCertFile ? 'https' : 'http'}://${host}:${server.port}`,
      `ABLY_KEY=${boot.created?.key ?? config.bootstrapKey}`,
      ...(node.faults ? [`PROXY_CONTROL_HOST=${node.faults.url}`] : []),
    ]
    process.stdout.write(lines.join('\n') + '\n')
    let stopping = false
    const stop = async () => {
      if (stopping) return
      stopping = true
      await node.shutdown().catch(() => 0)
      remove()
      flushLogs()
      process.exit(0)
    }
    process.on('SIGTERM', () => void stop())
    process.on('SIGINT', () => void stop())
  } catch (e) {
    remove()
    throw e
  }
}
