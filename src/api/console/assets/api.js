// The gateway's public interfaces as the console calls them, from the browser, with the pasted
// credential: a key (`appId.keyId:secret`, Basic auth) or a token (Bearer). The credential lives
// in this page only (and in sessionStorage when the user asks); it never goes into a URL.

/** An error answer of the gateway (`{error: {code, statusCode, message}}`), or no answer (status 0). */
export class ApiError extends Error {
  constructor(status, error = {}) {
    super(error.message || `HTTP ${status}`)
    this.status = status
    this.code = error.code
  }
}

const KEY = /^([^.:\s]+)\.([^.:\s]+):(\S+)$/

/** What was pasted: a key (with its name and app) or else a token. */
export function credentialOf(text) {
  const value = text.trim()
  const key = KEY.exec(value)
  if (key) return { kind: 'key', value, appId: key[1], keyName: `${key[1]}.${key[2]}` }
  return { kind: 'token', value }
}

const base64 = (text) => btoa(String.fromCharCode(...new TextEncoder().encode(text)))

export class Gateway {
  constructor(credential) {
    this.credential = credential
    this.authorization = credential.kind === 'key' ? `Basic ${base64(credential.value)}` : `Bearer ${credential.value}`
  }

  /** A JSON request to this gateway; resolves with the answer's JSON, rejects with an ApiError. */
  async request(method, path, { query, body } = {}) {
    const url = query ? `${path}?${new URLSearchParams(query)}` : path
    const headers = { authorization: this.authorization, accept: 'application/json' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    let answer
    try {
      answer = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
      })
    } catch (e) {
      throw new ApiError(0, { message: `The gateway did not answer (${e.message})` })
    }
    const text = await answer.text()
    let json
    try {
      json = text ? JSON.parse(text) : undefined
    } catch {
      json = undefined
    }
    if (!answer.ok) throw new ApiError(answer.status, json?.error ?? { message: text.slice(0, 200) })
    return json
  }

  /**
   * Query parameters that authenticate the event stream. EventSource cannot send headers, so
   * they go in its URL: a token made from the key (short-lived, and the key itself never appears
   * in a URL), or the pasted token itself.
   */
  async streamAuth() {
    if (this.credential.kind === 'token') return { accessToken: this.credential.value }
    const path = `/keys/${encodeURIComponent(this.credential.keyName)}/requestToken`
    const details = await this.request('POST', path, { body: {} })
    return { accessToken: details.token }
  }
}

/** `/channels/{name}...` with the name encoded. */
export const channelPath = (name, rest = '') => `/channels/${encodeURIComponent(name)}${rest}`

/** Liveness and readiness: they need no credential. */
export async function nodeHealth() {
  const get = async (path) => {
    try {
      const r = await fetch(path, { cache: 'no-store' })
      return { status: r.status, body: await r.json().catch(() => ({})) }
    } catch (e) {
      return { status: 0, body: { problem: e.message } }
    }
  }
  const [health, ready, connections] = await Promise.all([get('/health'), get('/ready'), openConnections()])
  return { health, ready, connections }
}

/**
 * Open connections on this node by transport (`realtime`, `event-stream`), read from `/metrics`
 * (`gateway_connections`); empty when it cannot be read.
 */
async function openConnections() {
  try {
    const r = await fetch('/metrics', { cache: 'no-store' })
    if (!r.ok) return {}
    const out = {}
    for (const m of (await r.text()).matchAll(/^gateway_connections\{transport="([^"]+)"\} (\S+)$/gm))
      out[m[1]] = Number(m[2])
    return out
  } catch {
    return {}
  }
}

const STORE = 'gateway-console.key'

/** The credential kept in this tab's sessionStorage (only when the user asked for it). */
export const savedKey = () => sessionStorage.getItem(STORE) ?? ''
export const saveKey = (text) => sessionStorage.setItem(STORE, text)
export const forgetKey = () => sessionStorage.removeItem(STORE)

/** A message or presence payload as text: JSON stays JSON text, binary is described, not shown. */
export function dataText(m) {
  if (m.data === undefined || m.data === null) return ''
  if (typeof m.encoding === 'string' && m.encoding.endsWith('base64')) return `(binary, base64: ${m.data})`
  return typeof m.data === 'string' ? m.data : JSON.stringify(m.data)
}

/** The presence action names, by wire number. */
export const PRESENCE_ACTIONS = ['absent', 'present', 'enter', 'leave', 'update']
