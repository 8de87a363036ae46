// The node's health: liveness (`/health`: the process answers) and readiness (`/ready`: started,
// store reachable, data intact; with the backend and, when not ready, the problem). Neither needs
// a credential, so this panel works before a key is pasted. Open connections of this node (realtime
// and event-stream) come from `/metrics`.
import { nodeHealth } from './api.js'
import { byId, fill, rows, status } from './dom.js'

/** A count of this node's, or `?` when /metrics could not be read. */
const count = (n) => (n === undefined ? '?' : String(n))

export async function refreshHealth() {
  const started = performance.now()
  const { health, ready, connections } = await nodeHealth()
  const ms = Math.round(performance.now() - started)
  const live = health.status === 200 && health.body.status === 'ok'
  const isReady = ready.status === 200 && ready.body.status === 'ready'
  status(
    byId('health-badge'),
    !live ? 'unreachable' : isReady ? 'ready' : 'not ready',
    !live ? 'error' : isReady ? 'ok' : 'error',
  )
  fill(
    byId('health'),
    ...rows([
      ['Liveness', live ? 'ok' : `no (${health.status || 'no answer'})`, { 'data-health': 'live' }],
      ['Readiness', ready.body.status ?? `no answer (${ready.status})`, { 'data-health': 'ready' }],
      ['Backend', ready.body.backend ?? '?', { 'data-health': 'backend' }],
      ...(ready.body.problem ? [['Problem', ready.body.problem, { 'data-health': 'problem' }]] : []),
      ['Realtime connections', count(connections.realtime), { 'data-health': 'realtime-connections' }],
      ['Event-stream connections', count(connections['event-stream']), { 'data-health': 'sse-connections' }],
      ['Answered in', `${ms} ms`, { 'data-health': 'latency' }],
      ['Checked at', new Date().toLocaleTimeString([], { hour12: false })],
    ]),
  )
}
