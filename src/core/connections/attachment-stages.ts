import type { OpenStream } from '../fanout/streams'
import type { Message } from '../types'
import { DeltaStage } from '../fanout/delta-stage'
import type { AttachRequest } from './attach-request'
import type { AttachStart } from './attach-start'
import type { FrameStage } from './attachment'
import type { ConnectionHost } from './host'
import { Flag } from './protocol'

/** What a stage adds to an attachment: a part of its session's request (fanout/streams.ts), or a stage of its own. */
interface StageGrant {
  session?: Partial<OpenStream>
  frames?: FrameStage
}

/** The modes that receive something: an attachment with one of them has a stream session. */
const RECEIVING = Flag.SUBSCRIBE | Flag.PRESENCE_SUBSCRIBE | Flag.OBJECT_SUBSCRIBE | Flag.ANNOTATION_SUBSCRIBE

/**
 * The delivery stages an attachment gets, keyed by what its ATTACH asked for (a new stage is an
 * entry here). Besides these, the channel's namespace rule gives every subscription to it its
 * own (late join and append rollup: fanout/delivery-stages.ts), and the channel its hold.
 */
const ATTACHMENT_STAGES: Record<string, (req: AttachRequest, conn: ConnectionHost) => StageGrant | undefined> = {
  /** A filtered channel (`[filter=...]name`): only the messages that pass, the filter shared with the channel's other subscribers of it (fanout/channel-filters.ts). */
  filter: (req) => (req.filter ? { session: { filter: req.filter } } : undefined),
  /**
   * SUBSCRIBE or ANNOTATION_SUBSCRIBE: what goes only live (summaries, annotations) kept or
   * counted while the session is not live (fanout/ephemeral-hold.ts).
   */
  held: (req, conn) =>
    req.modes & (Flag.SUBSCRIBE | Flag.ANNOTATION_SUBSCRIBE)
      ? {
          session: {
            held: {
              summaries: (req.modes & Flag.SUBSCRIBE) !== 0,
              annotations: (req.modes & Flag.ANNOTATION_SUBSCRIBE) !== 0,
              exceptConnection: conn.echo ? undefined : conn.id,
            },
          },
        }
      : undefined,
  /** The `appendRollupWindow` transport param: the window of the append rollup a namespace may give (fanout/delivery-stages.ts). */
  appendRollupWindow: (_req, conn) =>
    conn.appendRollupWindowMs === undefined
      ? undefined
      : { session: { appendRollupWindowMs: conn.appendRollupWindowMs } },
  /** `delta=vcdiff` with SUBSCRIBE: messages as deltas, each new attachment from a whole first message (fanout/delta-stage.ts). */
  delta: (req, conn) =>
    req.echoed.delta && req.modes & Flag.SUBSCRIBE
      ? { frames: new DeltaStage(conn.s.deltaMaxBytes, conn.echo ? undefined : conn.id) }
      : undefined,
}

/** How an attachment receives: its session's request (none when it receives nothing) and its own stage. */
export interface Deliveries {
  stream?: OpenStream
  frames?: FrameStage
}

/** The deliveries of an attachment: from its start, through the stages its ATTACH asked for. */
export function deliveriesOf(req: AttachRequest, start: AttachStart, conn: ConnectionHost): Deliveries {
  if (!(req.modes & RECEIVING)) return {}
  const stream: OpenStream = {
    principal: conn.principalOf,
    channels: [req.channel],
    positions: start.kind === 'resume' ? [start.from] : undefined,
    rewind: start.kind === 'rewind' ? start.count : undefined,
    rewindMs: start.kind === 'rewind' ? start.ms : undefined,
    managed: true,
    // receiving only object operations (LiveObjects) needs object-subscribe, not subscribe
    operation: req.modes & (Flag.SUBSCRIBE | Flag.PRESENCE_SUBSCRIBE) ? undefined : 'object-subscribe',
  }
  const frames: FrameStage[] = []
  for (const stage of Object.values(ATTACHMENT_STAGES)) {
    const grant = stage(req, conn)
    if (grant?.session) Object.assign(stream, grant.session)
    if (grant?.frames) frames.push(grant.frames)
  }
  return { stream, frames: frames.length > 1 ? chained(frames) : frames[0] }
}

/** Stages one after the other: each frame of one goes through the next. */
function chained(stages: FrameStage[]): FrameStage {
  return {
    *framed(batch) {
      let frames: Iterable<Message[]> = [batch]
      for (const s of stages) frames = [...frames].flatMap((f) => [...s.framed(f)])
      yield* frames
    },
  }
}
