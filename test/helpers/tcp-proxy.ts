import { createServer, connect, type Server, type Socket } from 'node:net'
import { Transform } from 'node:stream'

/**
 * A TCP proxy of the test's own, as a load balancer in front of gateway nodes: every new
 * connection goes to the current target port; a connection whose upstream goes away (the node
 * died) is closed towards the client too, so the client reconnects, to whatever the target is then.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>()
  /** Of each connection open, whether what its upstream sends is dropped. */
  private readonly replies = new Set<{ dropped: boolean }>()

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
    const replies = { dropped: false }
    this.replies.add(replies)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => {
      this.replies.delete(replies)
      client.destroy()
    })
    client.pipe(upstream)
    const filter = new Transform({
      transform: (chunk, _enc, done) => done(null, replies.dropped ? undefined : chunk),
    })
    upstream.pipe(filter).pipe(client)
  }

  /**
   * From now on, what the upstreams of the connections open now send is lost on its way to the
   * clients (as a node's last answers are when it crashes); connections made later are not affected.
   */
  dropReplies(): void {
    for (const r of this.replies) r.dropped = true
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
