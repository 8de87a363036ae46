// The app's stats (`GET /stats`) as charts: messages in and out, and connections, per minute over
// the last hour or per hour over the last day. Intervals without traffic have no record: they are
// drawn as zeros. The key needs the `stats` capability; without it the panel says so.
import { byId, fill, h, rows, status } from './dom.js'
import { barChart, formatCount } from './chart.js'

const UNITS = {
  minute: { ms: 60_000, count: 60, label: (d) => `${pad(d.getHours())}:${pad(d.getMinutes())}`, span: 'last hour' },
  hour: {
    ms: 3_600_000,
    count: 24,
    label: (d) => `${pad(d.getDate())}/${pad(d.getMonth() + 1)} ${pad(d.getHours())}h`,
    span: 'last 24 hours',
  },
}
const pad = (n) => String(n).padStart(2, '0')

/** The interval id (`yyyy-mm-dd:hh:mm`, `yyyy-mm-dd:hh`; UTC) of the interval starting at `ms`. */
function intervalId(unit, ms) {
  const iso = new Date(ms).toISOString() // yyyy-mm-ddThh:mm:...
  return unit === 'minute' ? `${iso.slice(0, 10)}:${iso.slice(11, 16)}` : `${iso.slice(0, 10)}:${iso.slice(11, 13)}`
}

const IN = 'messages.inbound.all.messages.count'
const OUT = 'messages.outbound.all.messages.count'
const PEAK = 'connections.all.peak'
const OPENED = 'connections.all.opened'
const REQUESTS = 'apiRequests.all.succeeded'

/** The charts: one bar per series and interval, from the stats entry `key`. */
const CHARTS = [
  {
    id: 'chart-messages',
    title: 'Messages',
    series: [
      { name: 'in', cls: 'in', key: IN },
      { name: 'out', cls: 'out', key: OUT },
    ],
  },
  {
    id: 'chart-connections',
    title: 'Connections',
    series: [
      { name: 'peak', cls: 'peak', key: PEAK },
      { name: 'opened', cls: 'opened', key: OPENED },
    ],
  },
]

export class StatsView {
  constructor() {
    this.gateway = undefined
    byId('stats-refresh').addEventListener('click', () => this.refresh())
    byId('stats-unit').addEventListener('change', () => this.refresh())
  }

  use(gateway) {
    this.gateway = gateway
    this.clear()
  }

  clear() {
    for (const id of ['stats-summary', ...CHARTS.map((c) => c.id)]) fill(byId(id))
  }

  async refresh() {
    if (!this.gateway) return
    const out = byId('stats-status')
    const unitName = byId('stats-unit').value === 'hour' ? 'hour' : 'minute'
    const unit = UNITS[unitName]
    let records, now
    try {
      // the intervals are the server's: its clock decides which one is current
      ;[now] = await this.gateway.request('GET', '/time')
      const start = now - (now % unit.ms) - (unit.count - 1) * unit.ms
      records = await this.gateway.request('GET', '/stats', {
        query: { unit: unitName, start, end: now, limit: unit.count, direction: 'backwards' },
      })
    } catch (e) {
      this.clear()
      if (e.status === 403)
        return status(
          out,
          `This key cannot read stats (${e.message}). Stats need a key whose capability grants "stats", ` +
            'for example {"*":["subscribe","publish","presence","history","stats"]}.',
          'error',
        )
      return status(out, e.message, 'error')
    }
    const byInterval = new Map(records.map((r) => [r.intervalId, r.entries ?? {}]))
    const points = []
    for (let i = unit.count - 1; i >= 0; i--) {
      const at = now - (now % unit.ms) - i * unit.ms
      const e = byInterval.get(intervalId(unitName, at)) ?? {}
      points.push({ label: unit.label(new Date(at)), e })
    }
    const sum = (k) => points.reduce((n, p) => n + (p.e[k] ?? 0), 0)
    const max = (k) => points.reduce((n, p) => Math.max(n, p.e[k] ?? 0), 0)
    fill(
      byId('stats-summary'),
      ...rows([
        ['Messages in', formatCount(sum(IN)), { 'data-stat': 'messages-in' }],
        ['Messages out', formatCount(sum(OUT)), { 'data-stat': 'messages-out' }],
        ['Peak connections', formatCount(max(PEAK)), { 'data-stat': 'connections-peak' }],
        ['Connections opened', formatCount(sum(OPENED)), { 'data-stat': 'connections-opened' }],
        ['API requests', formatCount(sum(REQUESTS)), { 'data-stat': 'api-requests' }],
      ]),
    )
    for (const c of CHARTS)
      fill(
        byId(c.id),
        ...barChart({
          title: `${c.title} per ${unitName}`,
          series: c.series,
          points: points.map((p) => ({ label: p.label, values: c.series.map((sr) => p.e[sr.key] ?? 0) })),
        }),
      )
    status(out, `${unit.span}, at ${new Date().toLocaleTimeString([], { hour12: false })}`)
  }
}
