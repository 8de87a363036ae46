import { createServer, connect, type Server, type Socket } from 'node:net'
import { Transform } from 'node:stream'

/**
 * A TCP proxy of the test's own, as a load balancer in front of gateway nodes: every new
 * connection goes to the current target port; a connection whose upstream goes away (the node
 * died) is closed towards the client too, so the client reconnects, to whatever the target is then.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>()
  /** Of each connection open, whether what its upstream sends is dropped, or held back (while `held` is set). */
  private readonly replies = new Set<Replies>()

  private constructor(
    private readonly server: Server,
    public target: number,
  ) {}

  static start(target: number): Promise<TcpProxy> {
    const server = createServer()
    const proxy = new TcpProxy(server, target)
    server.on('connection', (client) => proxy.pipe(client))
    return new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve(proxy))
    })
  }

  get port(): number {
    return (this.server.address() as { port: number }).port
  }

  private pipe(client: Socket) {
    const upstream = connect(this.target, '127.0.0.1')
    for (const s of [client, upstream]) {
      this.sockets.add(s)
      s.on('error', () => s.destroy())
      s.on('close', () => this.sockets.delete(s))
    }
    const replies: Replies = { dropped: false }
    this.replies.add(replies)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => {
      this.replies.delete(replies)
      // held back: the client sees the upstream's end after what it sent first
      if (replies.held) replies.endOnRelease = true
      else client.destroy()
    })
    client.pipe(upstream)
    const filter = new Transform({
      transform: (chunk: Buffer, _enc, done) => {
        if (replies.held) {
          replies.held.push(chunk)
          return done()
        }
        done(null, replies.dropped ? undefined : chunk)
      },
    })
    replies.out = filter
    upstream.pipe(filter, { end: false }).pipe(client)
  }

  /**
   * From now on, what the upstreams of the connections open now send is lost on its way to the
   * clients (as a node's last answers are when it crashes); connections made later are not affected.
   */
  dropReplies(): void {
    for (const r of this.replies) r.dropped = true
  }

  /**
   * From now on, what the upstreams of the connections open now send is held back, their end
   * too, until `release` hands it on (in order); `bytes` is how much is held.
   */
  holdReplies(): { bytes: () => number; release: () => void } {
    const open = [...this.replies]
    for (const r of open) r.held ??= []
    return {
      bytes: () => open.reduce((n, r) => n + (r.held?.reduce((m, c) => m + c.length, 0) ?? 0), 0),
      release: () => {
        for (const r of open) {
          const held = r.held ?? []
          r.held = undefined
          for (const c of held) r.out?.push(c)
          if (r.endOnRelease) r.out?.end()
        }
      },
    }
  }

  /** Closes every connection open now, both ways (as a server that went away would). */
  cutAll(): void {
    for (const s of this.sockets) s.destroy()
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

type Replies = { dropped: boolean; held?: Buffer[]; endOnRelease?: boolean; out?: Transform }
