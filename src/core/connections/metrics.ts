import type { Timers } from '../../lib/clock'
import { latencyNow, metrics, NO_LABELS } from '../../lib/metrics'

/**
 * The realtime transport's metrics, resolved once: the publish and delivery paths add to these
 * series directly (a property add per batch, a clock read per turn of answers), never a label
 * lookup or a string per message. Scrape-time gauges (connections, attachments, presence members)
 * are registered by the registry (registry.ts).
 */

/** Upper bounds of the ACK latency histogram (seconds). */
const ACK_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

export const ackLatency = metrics.histogram(
  'gateway_realtime_ack_seconds',
  'Realtime protocol messages (MESSAGE, PRESENCE) from their arrival to the ACK that answers them.',
  ACK_BUCKETS,
)
export const ackSeries = ackLatency.series(NO_LABELS)

let turn = 0
const nextTurn = () => {
  turn = 0
}
/**
 * Now (ms, `latencyNow()`), read once per event-loop turn for the whole process: the protocol
 * messages of one turn share it (an ACK latency is at most one turn longer than it was).
 */
export function arrival(timers: Timers): number {
  if (turn === 0) {
    turn = latencyNow()
    timers.soon(nextTurn)
  }
  return turn
}

export const slowPaused = metrics
  .counter(
    'gateway_realtime_slow_consumers_paused_total',
    'Times a realtime connection paused its deliveries for unsent bytes over REALTIME_BUFFER_BYTES (it catches up from the log).',
  )
  .series()

export const slowCut = metrics
  .counter(
    'gateway_realtime_slow_consumers_cut_total',
    'Realtime connections cut for not reading fast enough (answers unread, or fell behind retention).',
  )
  .series()
