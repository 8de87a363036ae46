import { createHmac, randomBytes } from 'node:crypto'

const b64url = (s: string) => Buffer.from(s).toString('base64url')

/** An HS256 JWT as a customer's auth server would mint it (independent of the gateway's code). */
export function makeJwt(keyName: string, secret: string, claims: Record<string, unknown>, alg = 'HS256'): string {
  const head = b64url(JSON.stringify({ typ: 'JWT', alg, kid: keyName }))
  const body = b64url(JSON.stringify(claims))
  const sig = createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url')
  return `${head}.${body}.${sig}`
}

/** A signed TokenRequest as client libraries build it (mac over the newline-joined fields). */
export function signedTokenRequest(
  keyName: string,
  secret: string,
  fields: { ttl?: number; capability?: string; clientId?: string; timestamp?: number; nonce?: string } = {},
) {
  const req = {
    keyName,
    ttl: fields.ttl,
    capability: fields.capability,
    clientId: fields.clientId,
    timestamp: fields.timestamp ?? Date.now(),
    nonce: fields.nonce ?? randomBytes(12).toString('hex'),
  }
  const text =
    [keyName, req.ttl ?? '', req.capability ?? '', req.clientId ?? '', req.timestamp, req.nonce].join('\n') + '\n'
  return { ...req, mac: createHmac('sha256', secret).update(text).digest('base64') }
}
