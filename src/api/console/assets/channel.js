// One channel at a time: its live messages and presence (event stream), its current members
// (`GET /channels/{ch}/presence`), publishing (`POST /channels/{ch}/messages`) and history
// (`GET /channels/{ch}/messages`). Lists keep their newest entries only, so memory stays bounded.
import { channelPath, dataText, PRESENCE_ACTIONS } from './api.js'
import { byId, clip, fill, h, prepend, status, timeOf } from './dom.js'
import { LiveStream } from './stream.js'

const LIVE_MAX = 200
const EVENTS_MAX = 100
const MEMBERS_SHOWN = 200
const HISTORY_LIMIT = 100

/** A message as a list entry (its name, data, client and time; all as text). */
function messageItem(m) {
  return h(
    'li',
    { class: 'message', 'data-id': m.id ?? '' },
    h('time', { text: timeOf(m.timestamp ?? Date.now()) }),
    h('strong', { class: 'name', text: m.name ?? '' }),
    h('code', { class: 'data', text: clip(dataText(m)) }),
    m.clientId ? h('span', { class: 'client', text: m.clientId }) : undefined,
  )
}

export class ChannelView {
  /** `onLive()`: the stream (re)opened, so the channel's occupancy changed. */
  constructor(onLive = () => {}) {
    this.onLive = onLive
    this.gateway = undefined
    this.channel = undefined
    this.stream = undefined
    /** Present members by `connectionId:clientId`, as the presence set identifies them. */
    this.members = new Map()
    /** Members that had an event before the member list arrived: the event is newer than the list. */
    this.seen = new Set()
    this.listed = false
    byId('subscribe-form').addEventListener('submit', (e) => {
      e.preventDefault()
      this.subscribe(byId('channel-name').value.trim())
    })
    byId('publish-form').addEventListener('submit', (e) => {
      e.preventDefault()
      this.publish()
    })
    byId('history-load').addEventListener('click', () => this.history())
  }

  /** Uses a new credential (or none); any open stream is closed. */
  use(gateway) {
    this.gateway = gateway
    this.unsubscribe()
  }

  unsubscribe() {
    this.stream?.close()
    this.stream = undefined
    this.channel = undefined
    byId('channel-view').hidden = true
    status(byId('stream-status'), 'not subscribed')
  }

  subscribe(channel) {
    if (!channel || !this.gateway) return
    this.unsubscribe()
    this.channel = channel
    byId('channel-name').value = channel
    byId('channel-title').textContent = `Channel ${channel}`
    for (const id of ['live', 'presence-events', 'members', 'history']) fill(byId(id))
    for (const id of ['publish-status', 'history-status']) status(byId(id), '')
    this.members.clear()
    this.seen.clear()
    this.listed = false
    byId('member-count').textContent = '0'
    byId('channel-view').hidden = false
    this.stream = new LiveStream(this.gateway, channel, {
      message: (m) => prepend(byId('live'), messageItem(m), LIVE_MAX),
      presence: (p) => this.presenceEvent(p),
      state: (text, kind) => {
        status(byId('stream-status'), text, kind)
        if (kind === 'live') this.onLive()
      },
    }).start()
    this.loadMembers(channel, this.stream)
  }

  /** The current members; events that arrive meanwhile are applied on top of them. */
  async loadMembers(channel, stream) {
    try {
      const members = await this.gateway.request('GET', channelPath(channel, '/presence'), { query: { limit: 1000 } })
      if (stream !== this.stream) return
      for (const p of members) if (!this.seen.has(memberKey(p))) this.members.set(memberKey(p), p)
      this.listed = true
      this.seen.clear()
      this.renderMembers()
    } catch (e) {
      if (stream === this.stream) status(byId('stream-status'), `presence: ${e.message}`, 'error')
    }
  }

  presenceEvent(p) {
    const action = PRESENCE_ACTIONS[p.action] ?? String(p.action)
    prepend(
      byId('presence-events'),
      h(
        'li',
        { class: 'presence-event', 'data-action': action },
        h('time', { text: timeOf(p.timestamp ?? Date.now()) }),
        h('strong', { text: action }),
        h('span', { class: 'client', text: p.clientId ?? '' }),
        h('code', { class: 'data', text: clip(dataText(p), 200) }),
      ),
      EVENTS_MAX,
    )
    const key = memberKey(p)
    if (!this.listed) this.seen.add(key)
    if (action === 'leave' || action === 'absent') this.members.delete(key)
    else this.members.set(key, p)
    this.renderMembers()
  }

  renderMembers() {
    const all = [...this.members.values()]
    byId('member-count').textContent = String(all.length)
    fill(
      byId('members'),
      ...all
        .slice(0, MEMBERS_SHOWN)
        .map((p) =>
          h(
            'li',
            { class: 'member', 'data-client-id': p.clientId ?? '' },
            h('strong', { text: p.clientId ?? '' }),
            h('code', { class: 'data', text: clip(dataText(p), 200) }),
          ),
        ),
      all.length > MEMBERS_SHOWN ? h('li', { text: `… and ${all.length - MEMBERS_SHOWN} more` }) : undefined,
    )
  }

  async publish() {
    const channel = this.channel
    const out = byId('publish-status')
    const name = byId('publish-name').value
    let data = byId('publish-data').value
    if (byId('publish-json').checked) {
      try {
        data = JSON.parse(data)
      } catch (e) {
        return status(out, `not JSON: ${e.message}`, 'error')
      }
    }
    const message = name ? { name, data } : { data }
    try {
      const r = await this.gateway.request('POST', channelPath(channel, '/messages'), { body: message })
      status(out, `published ${r.messageId ?? ''}`, 'ok')
    } catch (e) {
      status(out, `not published: ${e.message}`, 'error')
    }
  }

  async history() {
    const channel = this.channel
    const out = byId('history-status')
    status(out, 'loading…')
    try {
      const messages = await this.gateway.request('GET', channelPath(channel, '/messages'), {
        query: { limit: HISTORY_LIMIT },
      })
      if (channel !== this.channel) return
      fill(byId('history'), ...messages.map(messageItem))
      status(out, `${messages.length} message${messages.length === 1 ? '' : 's'}, newest first`)
    } catch (e) {
      status(out, e.message, 'error')
    }
  }
}

const memberKey = (p) => `${p.connectionId}:${p.clientId}`
