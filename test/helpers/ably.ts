import type * as Ably from 'ably'

/** Awaits a call of the official client that must fail; returns the ErrorInfo it failed with. */
export async function ablyError(p: Promise<unknown>): Promise<Ably.ErrorInfo> {
  try {
    await p
  } catch (e) {
    return e as Ably.ErrorInfo
  }
  throw new Error('expected the call to fail')
}
