/**
 * Top functions of a `bun --cpu-prof` profile (e.g. the ones `bun bench/run.ts <scenario> --profile`
 * writes), by share of samples: `bun bench/cpu-profile-top.ts <file.cpuprofile> [N]`.
 * Sample counts, not the time deltas the markdown profile sums: those also charge idle gaps
 * to whatever function ran last, which overstates functions of a half-idle process.
 */
interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
}
const [file, limit = '25'] = process.argv.slice(2)
if (!file) throw new Error('usage: bun bench/cpu-profile-top.ts <file.cpuprofile> [N]')
const profile = JSON.parse(await Bun.file(file).text()) as {
  nodes: Node[]
  samples: number[]
  startTime: number
  endTime: number
}
const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
const counts = new Map<string, number>()
for (const id of profile.samples) {
  const f = nodes.get(id)!.callFrame
  const key = `${f.functionName || '(anonymous)'}  ${f.url ? `${f.url.replace(/^file:\/\//, '')}:${f.lineNumber + 1}` : '[native]'}`
  counts.set(key, (counts.get(key) ?? 0) + 1)
}
const total = profile.samples.length
console.log(`${total} samples over ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s`)
for (const [key, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, Number(limit)))
  console.log(`${((n / total) * 100).toFixed(1).padStart(5)}%  ${key}`)
export {}
