import * as Ably from 'ably'

/** What `POST /apps` answers (the hosted sandbox's shape plus where the server is). */
export interface ProvisionedApp {
  appId: string
  accountId: string
  keys: Array<{ keyName: string; keySecret: string; keyStr: string; capability: string }>
  namespaces: Array<{ id: string }>
  endpoint: string
  port: number
  tls: boolean
}

/**
 * The app a client-library test harness asks the sandbox for: a full-access key, keys with
 * overlapping wildcard and per-channel capabilities (operations deliberately unsorted), a
 * subscribe-only key, a key with revocable tokens and a `[*]*` key; two namespaces; present members.
 */
export const TEST_APP_SETUP = {
  limits: { presence: { maxMembers: 250 } },
  keys: [
    {},
    {
      capability: JSON.stringify({
        'cansubscribe:*': ['subscribe'],
        'canpublish:*': ['publish'],
        'canpublish:andpresence': ['publish', 'presence'],
        'pushenabled:*': ['subscribe', 'publish', 'push-subscribe'],
        'pushenabled:admin:*': ['subscribe', 'push-admin', 'publish'],
      }),
    },
    {
      capability: JSON.stringify({
        channel2: ['subscribe', 'publish'],
        channel0: ['publish'],
        channel4: ['subscribe', 'presence', 'publish'],
        channel6: ['*'],
      }),
    },
    { capability: '{ "*": ["subscribe"] }' },
    { revocableTokens: true },
    { capability: JSON.stringify({ '[*]*': ['*'] }) },
  ],
  namespaces: [
    { id: 'persisted', persisted: true },
    { id: 'pushenabled', pushEnabled: true },
  ],
  channels: [{ name: 'persisted:presence_fixtures', presence: [{ clientId: 'client_string', data: 'a string' }] }],
}

/** Provisions an app the way test harnesses do: one unauthenticated JSON POST. */
export async function provisionApp(baseUrl: string, body: object = TEST_APP_SETUP): Promise<ProvisionedApp> {
  const r = await fetch(`${baseUrl}/apps`, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  if (r.status >= 300) throw new Error(`POST /apps: ${r.status} ${await r.text()}`)
  return (await r.json()) as ProvisionedApp
}

/** An ably-js REST client routed by the provisioning answer alone (nothing else known of the server). */
export const clientOf = (
  app: ProvisionedApp,
  useBinaryProtocol: boolean,
  opts: Omit<Ably.ClientOptions, 'endpoint' | 'port' | 'tls' | 'useBinaryProtocol'>,
) =>
  new Ably.Rest({
    endpoint: app.endpoint,
    ...(app.tls ? { tlsPort: app.port } : { port: app.port }),
    tls: app.tls,
    useBinaryProtocol,
    logLevel: 0,
    ...opts,
  })
