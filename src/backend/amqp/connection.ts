import { connect, type Channel, type ChannelModel, type ConfirmChannel } from 'amqplib'
import { sleep } from '../../lib/sleep'

const FIRST_BACKOFF_MS = 100
const MAX_BACKOFF_MS = 5000

/**
 * One AMQP connection with its confirm channel (for publishing), kept up: when either closes it is
 * made again, with backoff from 100 ms doubling to 5 s. `generation` changes with each new
 * connection (what was declared on the old one is to be declared again).
 */
export class AmqpConnection {
  private model?: ChannelModel
  private confirm?: ConfirmChannel
  private stopped = false
  private waiters = new Set<() => void>()
  generation = 0

  constructor(
    private readonly url: string,
    /** Called when a (new) connection is ready. */
    private readonly onReady: () => void,
    private readonly onError: (e: unknown) => void,
    /** Run before each attempt to connect (e.g. making the vhost it opens); a rejection counts as a failed attempt. */
    private readonly prepare?: () => Promise<void>,
  ) {
    void this.loop()
  }

  /** The confirm channel, while connected. */
  publisher(): ConfirmChannel | undefined {
    return this.confirm
  }

  /** The connection, waiting for it at most `ms`; rejects when there is none by then. */
  async connected(ms: number): Promise<ChannelModel> {
    if (!this.model || !this.confirm) {
      let done!: () => void
      const ready = new Promise<void>((resolve) => (done = resolve))
      this.waiters.add(done)
      const timer = setTimeout(done, ms)
      await ready
      clearTimeout(timer)
      this.waiters.delete(done)
    }
    if (!this.model || !this.confirm) throw new Error('AMQP broker unreachable')
    return this.model
  }

  private async loop() {
    let backoff = FIRST_BACKOFF_MS
    while (!this.stopped && !this.model) {
      let model: ChannelModel | undefined
      try {
        await this.prepare?.()
        if (this.stopped) return
        model = await connect(this.url, { timeout: 5000 })
        model.on('error', this.onError)
        model.on('close', () => this.lost(model!))
        const confirm = await model.createConfirmChannel()
        confirm.on('error', this.onError)
        // a channel closed by the broker (it should not be): start over with a new connection
        confirm.on('close', () => void closeQuietly(model!))
        if (this.stopped) {
          await closeQuietly(model)
          return
        }
        this.model = model
        this.confirm = confirm
        this.generation++
        for (const w of this.waiters) w()
        this.onReady()
        return
      } catch (e) {
        this.onError(e)
        if (model) await closeQuietly(model)
        await sleep(backoff)
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2)
      }
    }
  }

  private lost(model: ChannelModel) {
    if (this.model !== model) return
    this.model = undefined
    this.confirm = undefined
    if (!this.stopped) void sleep(FIRST_BACKOFF_MS).then(() => this.loop())
  }

  async close(): Promise<void> {
    this.stopped = true
    const model = this.model
    this.model = undefined
    this.confirm = undefined
    for (const w of this.waiters) w()
    if (model) await closeQuietly(model)
  }
}

/** How long a close waits for the broker's close-ok before it lets go (a broker that stopped answering). */
const CLOSE_GRACE_MS = 2000

/**
 * Closes an amqplib connection or channel, settling also when it closes otherwise meanwhile, and
 * at the latest after `graceMs`: amqplib's own `close()` waits for the broker's close-ok, and never
 * settles when the connection goes first (the broker closed it, or the socket ended), nor while a
 * broker that stopped answering is not yet found out by the heartbeat (a minute or two). A
 * connection still open then has its socket destroyed; a channel is left to its connection.
 */
export function closeQuietly(x: ChannelModel | Channel, graceMs = CLOSE_GRACE_MS): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      if (isConnection(x)) x.connection.stream.destroy()
      resolve()
    }, graceMs)
    const done = () => {
      clearTimeout(timer)
      resolve()
    }
    x.once('close', done)
    x.close().then(done, done)
  })
}

/** A connection (amqplib's model of one), not a channel: only it makes channels. */
const isConnection = (x: ChannelModel | Channel): x is ChannelModel & { connection: { stream: { destroy(): void } } } =>
  typeof (x as ChannelModel).createChannel === 'function'
