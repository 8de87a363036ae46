/**
 * The protocol version a request states (`X-Ably-Version`, or the `v` query parameter); undefined
 * when it states none or something that is not a number.
 */
export function protocolVersion(request: Request, query: Record<string, string | undefined>): number | undefined {
  const raw = request.headers.get('x-ably-version') ?? query.v
  const v = raw === null || raw === undefined || raw === '' ? NaN : Number(raw)
  return Number.isFinite(v) ? v : undefined
}
