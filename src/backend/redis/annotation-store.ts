import {
  TooManyAnnotations,
  type Annotation,
  type AnnotationStateOp,
  type AnnotationStore,
} from '../../core/channels/ports'
import { pack, unpack } from './codec'
import { BUFFERS, withTimeout, type RedisCommander } from './connection'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'

/** The version counter's field in a state hash (state fields begin with a letter and a NUL). */
const VERSION = '#v'

/**
 * Annotations of a message in two keys of its channel's slot: the summary state hash (plus the
 * version counter) and the list of annotations (msgpack), both expiring with the retention.
 *
 * CHANGE: KEYS[1] state hash; ARGV[1] set | del | incr, ARGV[2] field, ARGV[3] value or amount,
 * ARGV[4] retention ms, ARGV[5] most fields. Returns { 1, value before (nil: absent) }, or { -1 }
 * when the state is full.
 */
const CHANGE_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], ARGV[2])
local nxt = false
if ARGV[1] == 'set' then nxt = ARGV[3]
elseif ARGV[1] == 'incr' then
  local n = tonumber(cur or '0') + tonumber(ARGV[3])
  if n > 0 then nxt = string.format('%d', n) end
end
if nxt and not cur and (redis.call('HLEN', KEYS[1]) - redis.call('HEXISTS', KEYS[1], '${VERSION}')) >= tonumber(ARGV[5]) then
  return { -1 }
end
if nxt then redis.call('HSET', KEYS[1], ARGV[2], nxt) else redis.call('HDEL', KEYS[1], ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return { 1, cur }
`

/**
 * RECORD: KEYS[1] state hash, KEYS[2] list; ARGV[1] annotation, ARGV[2] retention ms, ARGV[3]
 * annotations kept. Appends the annotation and bumps the version.
 */
const RECORD_SCRIPT = `
redis.call('HINCRBY', KEYS[1], '${VERSION}', 1)
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3]), -1)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
`

/** Annotations in Redis, shared by every node; each change and each record is one script in the channel's slot. */
export class RedisAnnotationStore implements AnnotationStore {
  private readonly changeScript: ScriptRunner
  private readonly recordScript: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly retentionMs: number,
    private readonly timeoutMs: number,
  ) {
    this.changeScript = new ScriptRunner(cmd, CHANGE_SCRIPT)
    this.recordScript = new ScriptRunner(cmd, RECORD_SCRIPT)
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.timeoutMs)
  }

  async change(
    app: string,
    channel: string,
    s: string,
    op: AnnotationStateOp,
    maxFields: number,
  ): Promise<{ before?: string }> {
    const value = op.op === 'incr' ? String(op.by) : (op.value ?? '')
    const reply = (await this.t(
      this.changeScript.run(
        [this.keys.annotationState(app, channel, s)],
        [op.op, op.field, value, String(this.retentionMs), String(Math.min(maxFields, Number.MAX_SAFE_INTEGER))],
      ),
    )) as unknown as Array<string | number | null>
    if (Number(reply[0]) < 0) throw new TooManyAnnotations()
    const before = reply[1]
    return before === null || before === undefined ? {} : { before: String(before) }
  }

  async record(app: string, channel: string, a: Annotation, maxLog: number): Promise<void> {
    const s = a.messageSerial
    await this.t(
      this.recordScript.run(
        [this.keys.annotationState(app, channel, s), this.keys.annotationLog(app, channel, s)],
        [pack(a), String(this.retentionMs), String(maxLog)],
      ),
    )
  }

  async current(
    app: string,
    channel: string,
    serial: string,
  ): Promise<{ state: Record<string, string>; version: number }> {
    const reply = await this.t(this.cmd.sendCommand(['HGETALL', this.keys.annotationState(app, channel, serial)]))
    const flat = flatten(reply)
    const i = flat.indexOf(VERSION)
    return { state: stateOf(flat), version: i >= 0 && i % 2 === 0 ? Number(flat[i + 1]) : 0 }
  }

  async states(app: string, channel: string, serials: string[]): Promise<Map<string, Record<string, string>>> {
    const replies = await this.t(
      Promise.all(serials.map((s) => this.cmd.sendCommand(['HGETALL', this.keys.annotationState(app, channel, s)]))),
    )
    const out = new Map<string, Record<string, string>>()
    replies.forEach((reply, i) => {
      const state = stateOf(flatten(reply))
      if (Object.keys(state).length) out.set(serials[i]!, state)
    })
    return out
  }

  async list(app: string, channel: string, serial: string, offset: number, limit: number): Promise<Annotation[]> {
    const key = this.keys.annotationLog(app, channel, serial)
    const items = (await this.t(
      this.cmd.sendCommand(['LRANGE', key, String(offset), String(offset + limit - 1)], BUFFERS),
    )) as unknown as Buffer[]
    return items.map((b) => unpack<Annotation>(b))
  }
}

function flatten(reply: unknown): string[] {
  return Array.isArray(reply) ? reply.map(String) : Object.entries(reply as Record<string, string>).flat()
}

function stateOf(flat: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i] !== VERSION) out[flat[i]!] = flat[i + 1]!
  return out
}
