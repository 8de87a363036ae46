/**
 * The hosted sandbox's names, answered by the gateway on this machine: a hosts file that sends them
 * to 127.0.0.1 (mounted over /etc/hosts inside the run's private namespace only) and a certificate
 * for them signed by a CA made for the run, which the suites' processes trust through
 * NODE_EXTRA_CA_CERTS. Suites hard-wired to the sandbox then reach the gateway unedited. The
 * test-support hosts (the echo server, the connectivity checks) go to the stand-in of
 * `echo-server.ts` on ECHO_ADDRESS, under the same certificate.
 */
import { mkdirSync, writeFileSync, existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ECHO_ADDRESS, ECHO_HOSTS } from './echo-server'

/** The REST and realtime host of the `nonprod:sandbox` endpoint, its fallbacks, and the older REST host. */
export const SANDBOX_HOSTS = [
  'sandbox.realtime.ably-nonprod.net',
  ...['a', 'b', 'c', 'd', 'e'].map((id) => `sandbox.${id}.fallback.ably-realtime-nonprod.com`),
  'sandbox-rest.ably.io',
]
export const SANDBOX_URL = `https://${SANDBOX_HOSTS[0]}`

export interface RunTls {
  ca: string
  cert: string
  key: string
  hosts: string
  /** A resolv.conf naming only 127.0.0.1 (where no DNS server listens in the run's namespace). */
  resolver: string
}

function openssl(args: string[], cwd: string): void {
  const r = Bun.spawnSync(['openssl', ...args], { cwd, stdout: 'pipe', stderr: 'pipe' })
  if (r.exitCode !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr}`)
}

export function makeRunTls(dir: string): RunTls {
  mkdirSync(dir, { recursive: true })
  const t: RunTls = {
    ca: join(dir, 'ca.pem'),
    cert: join(dir, 'server.pem'),
    key: join(dir, 'server.key'),
    hosts: join(dir, 'hosts'),
    resolver: join(dir, 'resolv.conf'),
  }
  writeFileSync(t.resolver, 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n')
  writeFileSync(
    t.hosts,
    [
      '127.0.0.1 localhost',
      '::1 localhost',
      `127.0.0.1 ${SANDBOX_HOSTS.join(' ')}`,
      `${ECHO_ADDRESS} ${ECHO_HOSTS.join(' ')}`,
      '',
    ].join('\n'),
  )
  const names = [...SANDBOX_HOSTS, ...ECHO_HOSTS, 'localhost'].map((h) => `DNS:${h}`).join(',')
  const ext = `subjectAltName=${names},IP:127.0.0.1,IP:${ECHO_ADDRESS}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`
  const extPath = join(dir, 'ext.cnf')
  // a certificate made for other names (an older run's) is made again
  if (existsSync(t.cert) && existsSync(extPath) && readFileSync(extPath, 'utf8') === ext) return t
  const days = ['-days', '30']
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      ...days,
      '-subj',
      '/CN=conformance run CA',
    ],
    dir,
  )
  openssl(
    [
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'server.key',
      '-out',
      'server.csr',
      '-subj',
      `/CN=${SANDBOX_HOSTS[0]}`,
    ],
    dir,
  )
  writeFileSync(extPath, ext)
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'server.pem',
      ...days,
      '-extfile',
      'ext.cnf',
    ],
    dir,
  )
  return t
}
