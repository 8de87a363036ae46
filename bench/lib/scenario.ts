import type { LoadgenResult } from './loadgen-client'

/** Options every scenario receives from bench/run.ts. */
export interface RunOptions {
  /** Measured seconds per target, after `warmup` unmeasured seconds. */
  seconds: number
  warmup: number
  connections: number
  pipeline: number
  /** CI smoke mode: a few seconds; only correctness is asserted, never speed. */
  short: boolean
  /** bench/results/<timestamp>/: logs of the children, results.json, summary.md. */
  outDir: string
}

/** One load run against one target. */
export interface Measurement {
  target: string
  /** What one request is, e.g. "GET / (hello world)". */
  request: string
  load: LoadgenResult
}

export interface Check { name: string; ok: boolean; detail: string }

export interface ScenarioResult {
  scenario: string
  description: string
  measurements: Measurement[]
  /** Headline ratios, e.g. { 'publish / baseline': 0.25 }. */
  ratios: Record<string, number>
  checks: Check[]
  notes?: string[]
}

export type Scenario = (o: RunOptions) => Promise<ScenarioResult>
