import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { requireSystem } from './system'

export const OPENSSL = '/usr/bin/openssl'
export const opensslAvailable = () => requireSystem(OPENSSL, 'openssl')

/** A self-signed certificate made for the test, for 127.0.0.1 and localhost: its PEM files in `dir`. */
export function makeCert(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem')
  const key = join(dir, 'key.pem')
  execFileSync(
    OPENSSL,
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  )
  return { cert, key }
}
