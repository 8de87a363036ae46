import type { LoadgenResult } from '../loadgen'
import { resolve } from 'node:path'
import { BUN, spawnTracked } from './processes'

export type { LoadgenResult }

export interface LoadSpec {
  /** Target URL; `{n}` becomes `request index % variants`. */
  url: string
  variants?: number
  method?: string
  headers?: string[]
  body?: string
  /** A binary body (e.g. msgpack), base64: sent as is. */
  bodyBase64?: string
  expectStatus?: number
  seconds: number
  warmup: number
  connections: number
  pipeline: number
  /** Server process whose CPU use the generator reports. */
  serverPid?: number
  /** A redis-server whose CPU use the generator reports too. */
  redisPid?: number
  /** Prefix of its progress lines. */
  label?: string
}

const LOADGEN = resolve(import.meta.dir, '../loadgen.ts')

/** Runs bench/loadgen.ts in its own process and returns its result. */
export async function runLoadgen(spec: LoadSpec): Promise<LoadgenResult> {
  const args = [
    '--url',
    spec.url,
    '--variants',
    String(spec.variants ?? 1),
    '--seconds',
    String(spec.seconds),
    '--warmup',
    String(spec.warmup),
    '--connections',
    String(spec.connections),
    '--pipeline',
    String(spec.pipeline),
    '--expect',
    String(spec.expectStatus ?? 200),
    ...(spec.method ? ['--method', spec.method] : []),
    ...(spec.headers ?? []).flatMap((h) => ['--header', h]),
    ...(spec.body !== undefined ? ['--body', spec.body] : []),
    ...(spec.bodyBase64 !== undefined ? ['--body-base64', spec.bodyBase64] : []),
    ...(spec.serverPid ? ['--server-pid', String(spec.serverPid)] : []),
    ...(spec.redisPid ? ['--redis-pid', String(spec.redisPid)] : []),
    ...(spec.label ? ['--label', spec.label] : []),
  ]
  const proc = spawnTracked([BUN, LOADGEN, ...args], { stdout: 'pipe' })
  const out = await new Response(proc.stdout as ReadableStream<Uint8Array>).text()
  const code = await proc.exited
  if (code !== 0) throw new Error(`loadgen exited with ${code}: ${out.trim()}`)
  return JSON.parse(out.trim().split('\n').pop()!) as LoadgenResult
}
