/**
 * A client of the gateway's fault control API (FAULTS=on), shaped like the official client's
 * own test helper for the hosted tooling (ably-js test/uts/.../helpers/proxy.ts): sessions with
 * rules, imperative actions, the event log.
 */
import { afterEach } from 'bun:test'
export interface FaultEvent {
  timestamp: string
  type: string
  direction?: string
  url?: string
  queryParams?: Record<string, string>
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  message?: any
  method?: string
  path?: string
  status?: number
  initiator?: string
  closeCode?: number
  ruleMatched: string | null
  headers?: Record<string, string>
}

export interface FaultSession {
  id: string
  port: number
  addRules(rules: object[], position?: 'append' | 'prepend'): Promise<number>
  act(action: object): Promise<Response>
  log(): Promise<FaultEvent[]>
  close(): Promise<FaultEvent[]>
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

/** Creates a session (rules, port, timeoutMs as the control API takes them); throws on refusal. */
export async function faultSession(control: string, body: object = {}): Promise<FaultSession> {
  const r = await post(`${control}/sessions`, { target: { realtimeHost: 'ignored' }, ...body })
  if (r.status !== 201) throw new Error(`POST /sessions: ${r.status} ${await r.text()}`)
  const { sessionId: id, proxy } = (await r.json()) as { sessionId: string; proxy: { port: number } }
  const at = `${control}/sessions/${id}`
  return {
    id,
    port: proxy.port,
    async addRules(rules, position = 'append') {
      const res = await post(`${at}/rules`, { rules, position })
      if (res.status !== 200) throw new Error(`rules: ${res.status} ${await res.text()}`)
      return ((await res.json()) as { ruleCount: number }).ruleCount
    },
    act: (action) => post(`${at}/actions`, action),
    async log() {
      return ((await (await fetch(`${at}/log`)).json()) as { events: FaultEvent[] }).events
    },
    async close() {
      const res = await fetch(at, { method: 'DELETE' })
      return res.status === 200 ? ((await res.json()) as { events: FaultEvent[] }).events : []
    },
  }
}

/** The frames of a log going one way, with the protocol action given. */
export const frames = (log: FaultEvent[], direction: 'client_to_server' | 'server_to_client', action?: number) =>
  log.filter(
    (e) => e.type === 'ws_frame' && e.direction === direction && (action === undefined || e.message?.action === action),
  )

/**
 * A test file's sessions: `session(body)` opens one on the control API `control()` names, and every
 * session a test opened is closed after it.
 */
export function useFaultSessions(control: () => string) {
  const sessions: FaultSession[] = []
  afterEach(async () => {
    for (const s of sessions.splice(0)) await s.close()
  })
  return async (body: object = {}) => {
    const s = await faultSession(control(), body)
    sessions.push(s)
    return s
  }
}
