import { isLoopbackHost } from '../lib/addresses'
import { LIMITS_PROFILES, type LimitsProfile } from './limits-profiles'
import { SETTINGS, type Config, type SettingName } from './schema'
export { SETTINGS, type Config } from './schema'

/**
 * Reads the environment once and validates every setting; all problems are reported together.
 * `overrides` (by setting name) take precedence, which is how tests build configs.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Config> = {},
): Config {
  const out: Record<string, unknown> = {}
  const problems: string[] = []
  // the profile first: it gives the defaults of the limit settings
  let profile: LimitsProfile = 'default'
  try {
    profile = overrides.limitsProfile ?? SETTINGS.limitsProfile.parse(env[SETTINGS.limitsProfile.env] ?? 'default')
  } catch {
    /* reported with the others below */
  }
  const defaults = LIMITS_PROFILES[profile]
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    if (name in overrides) {
      out[name] = overrides[name]
      continue
    }
    const s = SETTINGS[name]
    const raw = env[s.env] ?? defaults[name] ?? s.default
    try {
      out[name] = s.parse(raw)
    } catch (e) {
      problems.push(`${s.env}: ${(e as Error).message}`)
    }
  }
  if (!problems.length && !out.tlsCertFile !== !out.tlsKeyFile)
    problems.push('TLS_CERT_FILE and TLS_KEY_FILE: set both or neither')
  // a body slower than the idle timeout is cut by the runtime with no answer instead of our 408
  if (
    !problems.length &&
    (out.idleConnectionTimeoutMs as number) > 0 &&
    (out.requestBodyTimeoutMs as number) >= (out.idleConnectionTimeoutMs as number)
  )
    problems.push('REQUEST_BODY_TIMEOUT_MS must be below IDLE_CONNECTION_TIMEOUT_MS (unless that is 0)')
  // processes sharing a port are separate nodes: only Redis shares channels between nodes
  if (!problems.length && out.reusePort && !out.redisUrl)
    problems.push('REUSE_PORT needs REDIS_URL: every process is a node, and only Redis shares channels between nodes')
  // workers are nodes sharing the port: only Redis gives nodes one order per channel
  if (!problems.length && (out.workers as number) > 1 && !out.redisUrl) {
    if (!('workers' in overrides) && env[SETTINGS.workers.env]?.trim().toLowerCase() === 'auto') out.workers = 1
    else
      problems.push(
        `WORKERS=${out.workers} needs REDIS_URL: every worker is a node, and the embedded store keeps a channel's order in one process only (set REDIS_URL, or WORKERS=1)`,
      )
  }
  if (!problems.length && (out.workers as number) > 1 && !out.workerId && out.port === 0)
    problems.push('WORKERS above 1 needs a fixed PORT: with 0 every worker would listen on a port of its own')
  // hash tags (`{...}`) in keys keep each channel in one Redis Cluster slot: the prefix must not hold braces
  if (!problems.length && /[{}]/.test(out.redisPrefix as string))
    problems.push(
      'REDIS_PREFIX must not contain { or } (they would change the hash tags that keep a channel in one Redis Cluster slot)',
    )
  if (!problems.length && !out.redisCluster && (out.redisUrl as string).includes(','))
    problems.push('REDIS_URL names several nodes: set REDIS_CLUSTER=true (only a cluster takes several seed nodes)')
  // the fault API cuts, forges and reads traffic: never reachable from elsewhere unless the operator says so
  if (!problems.length && out.faults && !out.faultsAllowPublic && !isLoopbackHost(out.faultsHost as string))
    problems.push(
      `FAULTS_HOST=${out.faultsHost as string} is not a loopback address: the fault control API lets whoever reaches it cut and forge traffic (set FAULTS_ALLOW_PUBLIC=true to allow it)`,
    )
  if (problems.length) throw new Error(`invalid configuration:\n  ${problems.join('\n  ')}`)
  return out as Config
}

/**
 * The config of `gateway sandbox`: the environment's settings over the sandbox's defaults (quiet
 * logs, loopback, rate limits off), then what a sandbox always is (`fixed`: its own data dir, the
 * embedded store...).
 */
export function loadSandboxConfig(
  fixed: Partial<Config>,
  env: Record<string, string | undefined> = process.env,
): Config {
  return loadConfig({ LOG_LEVEL: 'warn', HOST: '127.0.0.1', RATE_LIMITS: 'off', ...env }, fixed)
}

/** The settings listing (the table of docs/settings.md and --help), generated from the schema. */
export function settingsTable(): string {
  const rows = Object.values(SETTINGS).map(
    (s) => `| \`${s.env}\` | ${s.default ? `\`${s.default}\`` : '(unset)'} | ${s.description} |`,
  )
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n')
}

/**
 * The environment of worker `id` (1..WORKERS) of a supervisor: this process's, with REUSE_PORT on
 * (the workers share the port), WORKER_ID set (so the worker serves instead of supervising) and,
 * given one, the directory of the workers' sockets (SIBLING_SOCKET_DIR).
 */
export function workerEnvironment(
  id: number,
  env: Record<string, string | undefined> = process.env,
  siblingSocketDir?: string,
): Record<string, string> {
  const out = definedVariables(env)
  out[SETTINGS.reusePort.env] = 'true'
  out[SETTINGS.workerId.env] = String(id)
  if (siblingSocketDir) out[SETTINGS.siblingSocketDir.env] = siblingSocketDir
  return out
}

/** The variables of `env` that are set, as a process started with them takes them. */
export function definedVariables(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) if (value !== undefined) out[name] = value
  return out
}
