/** Correctness checks shared by the delivery scenarios: subscribers opened, publishes acknowledged, deliveries complete. */
import type { OpenResult, SettleResult } from './delivery-ledger'
import type { PublishResult } from './publisher-client'
import type { Check } from './scenario'

export const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const samples = (s: string[]) => (s.length ? `; e.g. ${s.slice(0, 3).join(' | ')}` : '')

export function openedCheck(
  label: string,
  wanted: number,
  o: OpenResult,
  what = 'stream opened (200 and first bytes)',
): Check {
  return {
    name: `${label}: every ${what}`,
    ok: o.established === wanted && o.failed === 0,
    detail: `${fmt(o.established)} of ${fmt(wanted)} established in ${fmt(o.ms)} ms, ${o.failed} failed${samples(o.errorSamples)}`,
  }
}

export function publishCheck(label: string, r: PublishResult): Check {
  const bad = r.sent - r.published + r.unanswered + r.connectionErrors + r.protocolErrors
  return {
    name: `${label}: every publish acknowledged (201 or ACK)`,
    ok: bad === 0 && r.published > 0,
    detail:
      `${fmt(r.published)} of ${fmt(r.sent)} publishes acknowledged, statuses ${JSON.stringify(r.statuses)}, unanswered ${r.unanswered}, ` +
      `connection errors ${r.connectionErrors}, protocol errors ${r.protocolErrors}${samples(r.errorSamples)}`,
  }
}

/**
 * Every subscriber got every acknowledged message exactly once, in order; and all (of the same
 * channels) in the same order. `acked`: messages each subscriber must have, or a description.
 */
export function deliveryChecks(label: string, subscribers: number, acked: number | string, s: SettleResult): Check[] {
  const anomalies = s.ahead + s.behind + s.foreign + s.protocolErrors
  return [
    {
      name: `${label}: every subscriber received every acknowledged message once and in order`,
      ok: s.complete === subscribers && s.missing === 0 && anomalies === 0 && s.lost === 0,
      detail:
        `${fmt(s.complete)} of ${fmt(subscribers)} subscribers complete (${typeof acked === 'number' ? `${fmt(acked)} messages each` : acked}) ${fmt(s.ms)} ms after the last acknowledgement; ` +
        `missing ${fmt(s.missing)}, gaps/reorders ${s.ahead}, duplicates/late ${s.behind}, foreign ${s.foreign}, protocol errors ${s.protocolErrors}, ` +
        `streams ended or cut ${s.lost}${samples(s.errorSamples)}`,
    },
    {
      name: `${label}: all subscribers saw the same order`,
      ok: s.orders === 1,
      detail: `${s.orders} distinct arrival order${s.orders === 1 ? '' : 's'} over ${fmt(subscribers)} subscribers${typeof acked === 'string' ? ' (compared among the subscribers of the same channels)' : ''}`,
    },
  ]
}

/** A note when the slow-consumer budget cut streams. */
export function cutNote(s: { lost: number; errorSamples: string[] }): string[] {
  if (!s.lost) return []
  const cut = s.errorSamples.some((e) => e.includes('80020'))
  return [
    `${s.lost} stream(s) ended by the gateway${cut ? ' as too slow (80020, unsent bytes above SSE_BUFFER_BYTES): raise it with --sse-buffer' : ''}`,
  ]
}
