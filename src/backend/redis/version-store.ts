import type { VersionQuery, VersionRecord, VersionStore, VersionWrite } from '../../core/channels/ports'
import type { Message } from '../../core/types'
import { pack, unpack } from './codec'
import { BUFFERS, type RedisCommander } from './clients'
import { withTimeout } from './errors'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'
import { VERSION_PUT_SCRIPT } from './lua/versions'

/**
 * Versions of mutable messages in Redis, shared by every node: per changed message one hash (its
 * latest version, the newest version serial and every version's body) and one sorted set of the
 * version serials, both expiring with the retention window after the last change. A put is one
 * script (lua/versions.ts), so concurrent changes on many nodes are compared and set atomically.
 */
export class RedisVersionStore implements VersionStore {
  private readonly putScript: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly retentionMs: number,
    private readonly timeoutMs: number,
  ) {
    this.putScript = new ScriptRunner(cmd, VERSION_PUT_SCRIPT)
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.timeoutMs)
  }

  async get(app: string, channel: string, serial: string): Promise<VersionRecord | undefined> {
    // one command: the latest version and the count as one write left them (the put compares the count)
    const [latest, count] = await this.t(
      this.cmd.sendCommand<Array<Buffer | null>>(
        ['HMGET', this.keys.versions(app, channel, serial), 'l', 'n'],
        BUFFERS,
      ),
    )
    if (!latest) return undefined
    // a record written before the count was kept beside the latest version: its index counts
    const n = count ?? (await this.t(this.cmd.sendCommand(['ZCARD', this.keys.versionIndex(app, channel, serial)])))
    return { latest: unpack<Message>(latest), count: Number(String(n)) }
  }

  async latest(app: string, channel: string, serials: string[]): Promise<Map<string, Message>> {
    const replies = await this.t(
      Promise.all(
        serials.map((s) =>
          this.cmd.sendCommand<Buffer | null>(['HGET', this.keys.versions(app, channel, s), 'l'], BUFFERS),
        ),
      ),
    )
    const out = new Map<string, Message>()
    replies.forEach((r, i) => {
      if (r) out.set(serials[i]!, unpack<Message>(r))
    })
    return out
  }

  async put(app: string, channel: string, { original, expected, version, latest }: VersionWrite): Promise<boolean> {
    const serial = version.mutation!.serial
    const reply = await this.t(
      this.putScript.run(
        [this.keys.versions(app, channel, serial), this.keys.versionIndex(app, channel, serial)],
        [
          String(expected),
          serial,
          pack(original),
          version.serial,
          pack(version),
          pack(latest),
          String(this.retentionMs),
        ],
      ),
    )
    return Number(reply) === 1
  }

  async versions(app: string, channel: string, serial: string, q: VersionQuery): Promise<Message[]> {
    const fwd = q.direction === 'forwards'
    const from = q.cursor === undefined ? (fwd ? '-' : '+') : `(${q.cursor}`
    const serials = await this.t(
      this.cmd.sendCommand<string[]>([
        fwd ? 'ZRANGEBYLEX' : 'ZREVRANGEBYLEX',
        this.keys.versionIndex(app, channel, serial),
        from,
        fwd ? '+' : '-',
        'LIMIT',
        '0',
        String(q.limit),
      ]),
    )
    if (!serials.length) return []
    const bodies = await this.t(
      this.cmd.sendCommand<Array<Buffer | null>>(
        ['HMGET', this.keys.versions(app, channel, serial), ...serials],
        BUFFERS,
      ),
    )
    // a record that expired between the two reads answers no bodies
    return bodies.filter((b): b is Buffer => !!b).map((b) => unpack<Message>(b))
  }
}
