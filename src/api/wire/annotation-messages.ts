import { Action, annotationFromEntry, summaryFromEntry, type Message } from '../../core/connections'
import { annotationToWire } from './annotation'

/**
 * Protocol messages of annotation deliveries, as the hosted service frames them: ANNOTATION (21) with the
 * `annotations` array (always present: ably-js drops a frame without it), and the message's
 * summary as a MESSAGE of action 4 (`message.summary`) whose serial is the annotated message's.
 * Both carry the channelSerial of their last entry, as every channel frame does: the client's
 * position (RTL15b: ably-js takes it from ANNOTATION frames too) then follows what it received, and
 * a resume from it replays the log after it (live-only entries are in the channel's serial order).
 */
export function annotationsMessage(entries: Message[], channel: string, channelSerial: string): object {
  const annotations = entries.map((m) => annotationToWire(annotationFromEntry(m), m.connectionId))
  return { action: Action.ANNOTATION, channel, channelSerial, annotations }
}

export function summariesMessage(entries: Message[], channel: string, channelSerial: string): object {
  const messages = entries.map((m) => {
    const e = summaryFromEntry(m)
    return { id: m.id, action: 4, serial: e.messageSerial, timestamp: m.timestamp, annotations: { summary: e.summary } }
  })
  return { action: Action.MESSAGE, channel, channelSerial, messages }
}
