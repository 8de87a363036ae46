// The app's active channels with their occupancy (`GET /channels?by=value`): the channels that
// have had traffic or subscribers recently. Choosing one subscribes the channel view to it.
import { byId, fill, h, status } from './dom.js'

const LIMIT = 100

export class ChannelsView {
  /** `choose(name)`: the user wants to watch channel `name`. */
  constructor(choose) {
    this.choose = choose
    this.gateway = undefined
    /** Refreshes may overlap (timer, button, a stream opening): only the latest one is shown. */
    this.latest = 0
    byId('channels-refresh').addEventListener('click', () => this.refresh())
    byId('channel-prefix').addEventListener('change', () => this.refresh())
  }

  use(gateway) {
    this.gateway = gateway
    fill(byId('channels-table').tBodies[0])
  }

  async refresh() {
    if (!this.gateway) return
    const out = byId('channels-status')
    const query = { by: 'value', limit: LIMIT }
    const prefix = byId('channel-prefix').value.trim()
    if (prefix) query.prefix = prefix
    const seq = ++this.latest
    let channels
    try {
      channels = await this.gateway.request('GET', '/channels', { query })
    } catch (e) {
      if (seq === this.latest) status(out, e.message, 'error')
      return
    }
    if (seq !== this.latest) return
    const body = byId('channels-table').tBodies[0]
    fill(body, ...channels.map((c) => this.row(c)))
    byId('channels-empty').hidden = channels.length > 0
    const more = channels.length >= LIMIT ? ` (the first ${LIMIT}: filter by prefix)` : ''
    status(out, `${channels.length} active${more}, at ${new Date().toLocaleTimeString([], { hour12: false })}`)
  }

  row(c) {
    const m = c.status?.occupancy?.metrics ?? {}
    const name = c.channelId ?? c.name
    return h(
      'tr',
      { 'data-channel': name },
      h('td', { class: 'channel', text: name }),
      h('td', { class: 'number', text: m.connections ?? 0 }),
      h('td', { class: 'number', text: m.presenceMembers ?? 0 }),
      h('td', {}, h('button', { type: 'button', text: 'Watch', onclick: () => this.choose(name) })),
    )
  }
}
