/** POSTs a JSON body with a timeout; resolves with the HTTP status (0 when the request failed). */
export async function postJson(url: string, headers: Record<string, string>, body: unknown, timeoutMs = 10_000): Promise<number> {
  try {
    const r = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    })
    await r.arrayBuffer().catch(() => undefined)
    return r.status
  } catch {
    return 0
  }
}
