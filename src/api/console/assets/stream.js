// The live view of one channel: the gateway's event stream (`GET /sse`) through the browser's
// EventSource, which delivers `message` and `presence` events. The stream resumes exactly where
// it was after any interruption: EventSource reconnects by itself with Last-Event-ID, and when
// this module must open a new one (its token expired or was refused) it passes `lastEvent`.

const RETRY_MS = [1000, 2000, 5000, 10000, 30000]

export class LiveStream {
  /**
   * `on.message(m)`, `on.presence(p)`: envelopes (`{id, name, data, encoding, clientId, timestamp,
   * channel}`; presence adds `action` and `connectionId`). `on.state(text, kind)`: what the stream
   * is doing, kind 'live', 'error' or ''.
   */
  constructor(gateway, channel, on) {
    this.gateway = gateway
    this.channel = channel
    this.on = on
    this.lastId = ''
    this.failures = 0
    this.closed = false
    this.source = undefined
    this.timer = undefined
  }

  start() {
    this.open()
    return this
  }

  close() {
    this.closed = true
    clearTimeout(this.timer)
    this.source?.close()
  }

  async open() {
    if (this.closed) return
    this.on.state('connecting…')
    let auth
    try {
      auth = await this.gateway.streamAuth()
    } catch (e) {
      return this.retry(`cannot authenticate the stream: ${e.message}`, e.status === 401 || e.status === 403)
    }
    if (this.closed) return
    const query = new URLSearchParams({ v: '1.2', channels: this.channel, ...auth })
    // a separator longer than the name cannot occur in it: a name with commas stays one channel
    if (this.channel.includes(',')) query.set('separator', `${this.channel}|`)
    if (this.lastId) query.set('lastEvent', this.lastId)
    const source = (this.source = new EventSource(`/sse?${query}`))
    source.onopen = () => {
      this.failures = 0
      this.on.state('live', 'live')
    }
    source.addEventListener('message', (e) => this.deliver(e, this.on.message))
    source.addEventListener('presence', (e) => this.deliver(e, this.on.presence))
    source.addEventListener('error', (e) => this.failed(source, e))
  }

  deliver(e, to) {
    if (e.lastEventId) this.lastId = e.lastEventId
    let envelope
    try {
      envelope = JSON.parse(e.data)
    } catch {
      return
    }
    to(envelope)
  }

  /**
   * The stream's own `error` events carry the gateway's error (data: `{code, statusCode, message}`);
   * EventSource's connection errors carry nothing. A refused or expired token gets a new one; a
   * gap the gateway could no longer replay (80008) is only reported, the stream goes on live.
   */
  failed(source, e) {
    if (this.closed || source !== this.source) return
    if (e.data) {
      let error = {}
      try {
        error = JSON.parse(e.data)
      } catch {}
      if (error.code === 80008) return this.on.state(`some messages could not be replayed: ${error.message}`, 'error')
      source.close()
      return this.retry(error.message || 'the stream ended', false, error.statusCode === 401)
    }
    // CLOSED: EventSource gave up (an error answer such as 401); otherwise it is retrying itself
    if (source.readyState === EventSource.CLOSED) this.retry('the stream was refused')
    else this.on.state('reconnecting…')
  }

  /** Opens a new stream after a pause (at once for a token to renew); stops when credentials are refused. */
  retry(why, fatal = false, renew = false) {
    this.source?.close()
    if (fatal) return this.on.state(why, 'error')
    const wait = renew && this.failures === 0 ? 0 : RETRY_MS[Math.min(this.failures, RETRY_MS.length - 1)]
    this.failures++
    this.on.state(`${why}; reconnecting in ${Math.round(wait / 1000)} s`, 'error')
    this.timer = setTimeout(() => this.open(), wait)
  }
}
