/**
 * Same-run comparisons (the realtime scenarios against their event-stream or HTTP counterparts):
 * two variants measured alternately on the same gateway build, in the order A B, B A, A B, …
 * (each variant leads every other round, so a drift of the machine's load over the run weighs on
 * both alike), and compared by the ratio of their means.
 */
export function alternate<T>(a: T, b: T, rounds: number): Array<{ round: number; variant: T }> {
  return Array.from({ length: rounds }, (_, r) =>
    (r % 2 === 0 ? [a, b] : [b, a]).map((variant) => ({ round: r + 1, variant })),
  ).flat()
}

export const mean = (xs: number[]) => (xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : NaN)

/** Lowest and highest of a list, as "lo-hi" (or one value), formatted by `f`. */
export function range(xs: number[], f: (x: number) => string): string {
  if (!xs.length) return 'n/a'
  const lo = Math.min(...xs)
  const hi = Math.max(...xs)
  return lo === hi ? f(lo) : `${f(lo)}-${f(hi)}`
}
