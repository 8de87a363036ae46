/**
 * The answer of the bare publish routes (bench/baseline-server.ts, and the bare stage of
 * bench/publish-steps.ts): 201 with a small JSON object of a publish answer's shape, as bare as a
 * route can make it.
 */
const JSON_HEADERS = { 'content-type': 'application/json' }

export const created = (channel: string, serial: unknown): Response =>
  new Response(JSON.stringify({ channel, messageId: 'bare:0', serials: [String(serial)] }), {
    status: 201,
    headers: JSON_HEADERS,
  })
