import { createServer, connect, type Server, type Socket } from 'node:net'

/**
 * A TCP proxy of the test's own, as a load balancer in front of gateway nodes: every new
 * connection goes to the current target port; a connection whose upstream goes away (the node
 * died) is closed towards the client too, so the client reconnects, to whatever the target is then.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>()

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
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
    client.pipe(upstream)
    upstream.pipe(client)
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
