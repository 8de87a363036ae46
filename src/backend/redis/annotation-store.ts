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
 * KEYS[1] state hash, KEYS[2] list; ARGV[1] set | del | incr, ARGV[2] field, ARGV[3] value or
 * amount, ARGV[4] annotation, ARGV[5] retention ms, ARGV[6] most fields, ARGV[7] annotations kept.
 * Returns { version, field, value, ... } after the change, or { -1 } when the state is full.
 */
const APPLY_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], ARGV[2])
local nxt = false
if ARGV[1] == 'set' then nxt = ARGV[3]
elseif ARGV[1] == 'incr' then
  local n = tonumber(cur or '0') + tonumber(ARGV[3])
  if n > 0 then nxt = string.format('%d', n) end
end
if nxt and not cur and (redis.call('HLEN', KEYS[1]) - redis.call('HEXISTS', KEYS[1], '${VERSION}')) >= tonumber(ARGV[6]) then
  return { -1 }
end
if nxt then redis.call('HSET', KEYS[1], ARGV[2], nxt) else redis.call('HDEL', KEYS[1], ARGV[2]) end
local v = redis.call('HINCRBY', KEYS[1], '${VERSION}', 1)
redis.call('RPUSH', KEYS[2], ARGV[4])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[7]), -1)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
local out = redis.call('HGETALL', KEYS[1])
table.insert(out, 1, v)
return out
`

/** Annotations in Redis, shared by every node; each apply is one script in the channel's slot. */
export class RedisAnnotationStore implements AnnotationStore {
  private readonly script: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly retentionMs: number,
    private readonly timeoutMs: number,
  ) {
    this.script = new ScriptRunner(cmd, APPLY_SCRIPT)
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.timeoutMs)
  }

  async apply(
    app: string,
    channel: string,
    a: Annotation,
    op: AnnotationStateOp,
    maxFields: number,
    maxLog: number,
  ): Promise<{ state: Record<string, string>; version: number }> {
    const s = a.messageSerial
    const value = op.op === 'incr' ? String(op.by) : (op.value ?? '')
    const reply = (await this.t(
      this.script.run(
        [this.keys.annotationState(app, channel, s), this.keys.annotationLog(app, channel, s)],
        [op.op, op.field, value, pack(a), String(this.retentionMs), String(maxFields), String(maxLog)],
      ),
    )) as unknown as Array<string | number>
    if (Number(reply[0]) < 0) throw new TooManyAnnotations()
    return { state: stateOf(reply.slice(1).map(String)), version: Number(reply[0]) }
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
