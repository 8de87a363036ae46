import { GatewayError } from '../../errors'
import type { AttachRequest } from './attach-request'
import { Flag, type ProtocolMessage } from './protocol'

/**
 * Where an attachment's deliveries start:
 * - `fresh`: at the channel's head (a first attach, an ATTACH_RESUME without a channelSerial, or
 *   a resume whose point is no longer retained: then with `error`, 90003, which ATTACHED carries);
 * - `rewind`: up to `count` messages before the head (of the last `ms` when given), a first attach
 *   with the `rewind` param;
 * - `resume`: right after `from`, the channelSerial the client last saw (ATTACHED with RESUMED).
 */
export type AttachStart =
  | { kind: 'fresh'; error?: GatewayError }
  | { kind: 'rewind'; count: number; ms?: number }
  | { kind: 'resume'; from: string }

/** Where resume points are looked up (fanout/streams.ts). */
export interface ResumePoints {
  /** Whether the channel can be resumed exactly after `serial`. */
  canResume(appId: string, channel: string, serial: string): Promise<boolean>
}

/**
 * The start an ATTACH asks for. An attach that resumes (ATTACH_RESUME, or a channelSerial: the
 * client was attached before) replays nothing by `rewind`: what it saw is not sent again (the
 * param is still checked: a malformed one fails the attach, 40003).
 */
export async function decideStart(
  req: AttachRequest,
  pm: ProtocolMessage,
  appId: string,
  points: ResumePoints,
): Promise<AttachStart> {
  const rewind = req.params.rewind === undefined ? undefined : parseRewind(String(req.params.rewind))
  const serial = typeof pm.channelSerial === 'string' && pm.channelSerial ? pm.channelSerial : undefined
  if (serial !== undefined)
    return (await points.canResume(appId, req.channel, serial))
      ? { kind: 'resume', from: serial }
      : {
          kind: 'fresh',
          error: new GatewayError(90003, 'Unable to recover channel (messages expired)'),
        }
  const resuming = typeof pm.flags === 'number' && (pm.flags & Flag.ATTACH_RESUME) !== 0
  return rewind && !resuming ? { kind: 'rewind', ...rewind } : { kind: 'fresh' }
}

/** At most this many messages are rewound, whatever the parameter asks (as the hosted service does). */
const MAX_REWIND = 100

/**
 * The `rewind` channel parameter: a count (`10`) or a window (`30s`, `2m`), at most 100 messages
 * either way; anything else fails the attach (40003).
 */
function parseRewind(raw: string): { count: number; ms?: number } {
  const count = /^\d{1,6}$/.exec(raw)
  if (count) return { count: Math.min(Number(raw), MAX_REWIND) }
  const window = /^(\d{1,6})(s|m)$/.exec(raw)
  if (window) return { count: MAX_REWIND, ms: Number(window[1]) * (window[2] === 'm' ? 60_000 : 1000) }
  throw new GatewayError(40003, `Invalid rewind param "${raw}": a count, or a window such as 10s or 2m`)
}
