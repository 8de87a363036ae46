/** Nearest-rank percentiles of a sample (sorted copy; the input is left alone). */
export interface Distribution {
  count: number
  min: number
  p50: number
  p90: number
  p99: number
  p999: number
  max: number
}

export function distribution(values: ArrayLike<number>): Distribution {
  const sorted = Float64Array.from(values).sort()
  const n = sorted.length
  const at = (q: number) => (n ? sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]! : NaN)
  return {
    count: n,
    min: n ? sorted[0]! : NaN,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    p999: at(0.999),
    max: n ? sorted[n - 1]! : NaN,
  }
}
