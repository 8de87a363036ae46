import { t } from 'elysia'

const opt = (description: string) => t.Optional(t.String({ description }))

/** Query of the event-stream endpoints (validation + OpenAPI). */
export const StreamQuery = t.Object(
  {
    channels: opt('channel names, comma-separated (or by `separator`), URL-encoded'),
    channel: opt('alias of channels'),
    v: opt('protocol version (required): 1.2 is current'),
    key: opt('API key (Basic authentication)'),
    accessToken: opt('token (token authentication)'),
    lastEvent: opt('event id to resume after (the Last-Event-ID header works too)'),
    rewind: opt('deliver up to this many recent messages per channel first (max 100)'),
    enveloped: opt('true (default): message objects; false: raw payloads'),
    heartbeats: opt('true: heartbeat events; false (default): newline keepalives'),
    separator: opt('channel separator, for names that contain commas'),
    appendRollupWindow: opt(
      'ms, 0-500 (default 40): appends to one message inside this window arrive as one append of the joined data (0: each append)',
    ),
    delta: opt(
      'vcdiff: every channel sends each message after the first as a VCDIFF delta of the previous one (a single channel: the [?delta=vcdiff] qualifier in front of its name)',
    ),
  },
  { additionalProperties: true },
)

/**
 * The stream (documented, never validated): `text/event-stream` records `id:`, `event:` (message,
 * presence, error, heartbeat) and `data:` (JSON text), or one JSON envelope per line.
 */
export const EventStreamOut = t.String({
  description: 'Server-Sent Events: id (resume token), event (message | presence | error | heartbeat), data (JSON)',
  examples: [
    'id: 1a2b:01826232498871-001\nevent: message\ndata: {"id":"x:0","name":"greeting","data":"hello","timestamp":1700000000000,"channel":"news"}\n\n',
  ],
})
