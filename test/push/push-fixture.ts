import type { Config } from '../../src/config'
import { APP_ID, createTestGateway, type TestGateway } from '../helpers/gateway'
import { keyWith } from '../chat/chat-fixture'

/** Shared helpers of the push suites (they run on both backends). */
export { allPages, as, expectError, json } from '../chat/chat-fixture'

/** The push-enabled namespace of the suites; `plain:` channels are in a namespace without push. */
export const PUSH_NS = 'pushenabled'

/** Capability of an ordinary client: push-subscribe, and its ablyChannel device channels (`inbox:*`). */
export const CLIENT_CAPABILITY = {
  [`${PUSH_NS}:*`]: ['push-subscribe', 'subscribe'],
  'inbox:*': ['publish', 'subscribe'],
}

export interface PushGateway {
  gw: TestGateway
  /** push-subscribe only (a client managing itself). */
  clientKey: string
  /** No push capability at all. */
  plainKey: string
  /** push-admin only, on one namespace (still an admin: push-admin counts on any resource). */
  adminKey: string
}

export async function pushGateway(overrides: Partial<Config> = {}): Promise<PushGateway> {
  const gw = await createTestGateway(overrides)
  const control = gw.backend.control
  await control.putNamespace({
    appId: APP_ID,
    id: PUSH_NS,
    persisted: false,
    pushEnabled: true,
    mutableMessages: false,
  })
  await control.putNamespace({
    appId: APP_ID,
    id: 'plain',
    persisted: false,
    pushEnabled: false,
    mutableMessages: false,
  })
  return {
    gw,
    clientKey: await keyWith(gw, 'pushclient', CLIENT_CAPABILITY),
    plainKey: await keyWith(gw, 'plainclient', { '*': ['publish', 'subscribe', 'history'] }),
    adminKey: await keyWith(gw, 'pushadmin', { 'ops:*': ['push-admin'] }),
  }
}

let seq = 0
/** An id not used by any other test of the run. */
export const fresh = (prefix: string) => `${prefix}-${++seq}-${Math.random().toString(36).slice(2, 7)}`

/** A device body for registration; `ablyChannel` devices receive on `inbox:<id>`. */
export function device(id: string, extra: Record<string, unknown> = {}, recipient?: Record<string, unknown>) {
  return {
    id,
    platform: 'android',
    formFactor: 'phone',
    push: { recipient: recipient ?? { transportType: 'ablyChannel', channel: `inbox:${id}` } },
    ...extra,
  }
}

export const fcm = (token = 'fcm-token') => ({ transportType: 'fcm', registrationToken: token })

/** Registers a device with the root key; returns the response body. */
export async function register(
  gw: TestGateway,
  body: Record<string, unknown>,
  init: { key?: string; headers?: Record<string, string> } = {},
) {
  const r = await gw.request('/push/deviceRegistrations', { method: 'POST', json: body, ...init })
  const text = await r.text()
  if (r.status !== 201) throw new Error(`register: ${r.status} ${text}`)
  return JSON.parse(text)
}

export const devicePath = (id: string, rest = '') => `/push/deviceRegistrations/${encodeURIComponent(id)}${rest}`
export const deviceToken = (token: string) => ({ 'x-ably-devicetoken': token })

/** A webhook receiver on a free port: records every request; answers with `status` (settable). */
export function webhookReceiver() {
  const received: Array<{ headers: Headers; body: any }> = []
  const state = { status: 200 }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      received.push({ headers: req.headers, body: await req.json() })
      return new Response(null, { status: state.status })
    },
  })
  return { url: `http://127.0.0.1:${server.port}/push`, received, state, stop: () => server.stop(true) }
}
