/**
 * A promise's resolving functions without an object or a closure per promise:
 * `const p = new Promise<T>(capture)`, then read `made.resolve` and `made.reject` at once (before
 * any other promise is made through `capture`). For hot paths that keep the functions in an object
 * of their own anyway (a queue entry, a deadline).
 */
export const made: { resolve: (v: any) => void; reject: (e: unknown) => void } = {
  resolve: () => {},
  reject: () => {},
}

export function capture(resolve: (v: any) => void, reject: (e: unknown) => void): void {
  made.resolve = resolve
  made.reject = reject
}
