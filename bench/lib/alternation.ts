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

/**
 * Runs `block(side)` `blocks` times for each of two sides, alternating which goes first, and
 * prints the median of each side's figures and of their ratios paired by block (the in-process
 * before/after benches: publish-route-cost.ts, realtime-publish-cost.ts).
 */
export async function pairedBlocks(
  what: string,
  blocks: number,
  dirs: { before: string; after: string },
  block: (side: 'before' | 'after') => Promise<number>,
): Promise<void> {
  const us = { before: [] as number[], after: [] as number[] }
  for (let b = 0; b < blocks; b++)
    for (const side of b % 2 ? (['after', 'before'] as const) : (['before', 'after'] as const))
      us[side].push(await block(side))
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!
  const ratios = us.after.map((a, i) => a / us.before[i]!)
  console.log(`before: ${dirs.before}\nafter:  ${dirs.after}`)
  console.log(
    `${what}, median of ${blocks} blocks: before ${median(us.before).toFixed(2)} ` +
      `(min ${Math.min(...us.before).toFixed(2)}), after ${median(us.after).toFixed(2)} ` +
      `(min ${Math.min(...us.after).toFixed(2)}); after ÷ before, paired by block: median ${median(ratios).toFixed(3)} ` +
      `(${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`,
  )
}

/**
 * Runs `run(side)` (its ms) `rounds` times for each of two sides in `alternate`'s order, printing
 * each run in ms and in ns per one of its `count` `unit`s, then the sides' medians and their
 * ratio (the in-process loops: ring-push.ts, delivery-encode.ts).
 */
export async function alternatedRuns(
  rounds: number,
  count: number,
  unit: string,
  run: (side: 'before' | 'after') => number | Promise<number>,
): Promise<void> {
  const ms = { before: [] as number[], after: [] as number[] }
  for (const { round, variant } of alternate('before' as const, 'after' as const, rounds)) {
    const t = await run(variant)
    ms[variant].push(t)
    console.log(`round ${round} ${variant}: ${t.toFixed(0)} ms, ${((t * 1e6) / count).toFixed(0)} ns per ${unit}`)
  }
  const med = (a: number[]) => a.slice().sort((x, y) => x - y)[a.length >> 1]!
  console.log(
    `median: before ${med(ms.before).toFixed(0)} ms, after ${med(ms.after).toFixed(0)} ms (after ÷ before ${(med(ms.after) / med(ms.before)).toFixed(3)})`,
  )
}
