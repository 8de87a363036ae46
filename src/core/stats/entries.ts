/**
 * The flattened `entries` of the hosted service's stats schema (app-stats 0.0.5): what a record
 * counts per transport and message type, and the `all` totals the hosted service adds beside them.
 * Both our own traffic counters and records loaded in the older nested form go through here, so
 * a query reads the same keys whichever way a record arrived.
 */

const MESSAGE_DIRECTIONS = /^messages\.(inbound|outbound)\.([^.]+)\.([^.]+)\.([^.]+)$/
const DIRECTION_TOTALS = /^messages\.(inbound|outbound)\.all\.([^.]+)\.([^.]+)$/
const PERSISTED = /^messages\.persisted\.([^.]+)\.([^.]+)$/

/**
 * Adds the `all` totals to entries that count messages per transport and type:
 * `messages.<dir>.<transport>.all.*` (every type), `messages.<dir>.all.<type>.*` (every transport),
 * `messages.all.<type>.*` (both directions) and `messages.persisted.all.*` (every type). A total
 * the entries already hold is kept as given, never added to. Totals are sums, so the totals of
 * several sets of entries add up to the totals of their sum (the stores add records together).
 */
export function withTotals(entries: Record<string, number>): Record<string, number> {
  const out = { ...entries }
  sumInto(out, MESSAGE_DIRECTIONS, (m) =>
    m[2] !== 'all' && m[3] !== 'all' ? `messages.${m[1]}.${m[2]}.all.${m[4]}` : undefined,
  )
  sumInto(out, MESSAGE_DIRECTIONS, (m) => (m[2] !== 'all' ? `messages.${m[1]}.all.${m[3]}.${m[4]}` : undefined))
  sumInto(out, DIRECTION_TOTALS, (m) => `messages.all.${m[2]}.${m[3]}`)
  sumInto(out, PERSISTED, (m) => (m[1] !== 'all' ? `messages.persisted.all.${m[2]}` : undefined))
  return out
}

/** Sums the entries matching `pattern` into the key `target` names, unless that key is present already. */
function sumInto(out: Record<string, number>, pattern: RegExp, target: (m: RegExpExecArray) => string | undefined) {
  const sums: Record<string, number> = {}
  for (const k in out) {
    const m = pattern.exec(k)
    const t = m ? target(m) : undefined
    if (t !== undefined) sums[t] = (sums[t] ?? 0) + out[k]!
  }
  for (const t in sums) if (!(t in out)) out[t] = sums[t]!
}

/**
 * A stats record in the older nested form (`inbound.realtime.messages.count`, `persisted.presence`,
 * `connections.tls.peak`, `apiRequests.succeeded`, `tokenRequests.succeeded`, ...) as flattened
 * schema entries, with the totals of `withTotals`. Anything that is not a number is ignored.
 */
export function flattenLegacyStats(record: Record<string, unknown>): Record<string, number> {
  const out: Record<string, number> = {}
  const add = (k: string, v: number) => {
    out[k] = (out[k] ?? 0) + v
  }
  const walk = (v: unknown, path: string[]) => {
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return
      const [head, ...rest] = path
      if (head === 'all' || head === 'inbound' || head === 'outbound' || head === 'persisted')
        add(['messages', ...path].join('.'), v)
      else if (head === 'tokenRequests') add(['apiRequests', 'tokenRequests', ...rest].join('.'), v)
      else if (head === 'apiRequests') add(['apiRequests', 'all', ...rest].join('.'), v)
      else if (head === 'connections') add(['connections', 'all', rest[rest.length - 1]].join('.'), v)
      else if (head === 'channels') add(path.join('.'), v)
      return
    }
    if (v && typeof v === 'object' && !Array.isArray(v)) for (const [k, x] of Object.entries(v)) walk(x, [...path, k])
  }
  for (const [k, v] of Object.entries(record)) if (k !== 'intervalId' && k !== 'unit') walk(v, [k])
  return withTotals(out)
}
