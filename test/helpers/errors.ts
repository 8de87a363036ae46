import { expect } from 'bun:test'

/**
 * Asserts an error response in the spec's shape: the status, a JSON body `{error: {code,
 * statusCode, message}}` and the `X-Ably-ErrorCode` header. Returns the error object. The status
 * is checked together with the body text, so a failure shows what the server said.
 */
export async function expectError(r: Response, status: number, code: number) {
  const text = await r.text()
  expect(`${r.status} ${text}`).toStartWith(`${status} `)
  expect(r.headers.get('content-type')).toBe('application/json')
  expect(r.headers.get('x-ably-errorcode')).toBe(String(code))
  const body = JSON.parse(text)
  expect(body.error).toMatchObject({ code, statusCode: status })
  expect(typeof body.error.message).toBe('string')
  return body.error
}
