import { settingsTable } from './config'

/**
 * The command line of `bun src/main.ts` and of the compiled `dist/gateway`. Settings come from
 * the environment only; the arguments choose what the process does, and anything unknown is
 * refused (exit 2) before a data dir or a port is touched.
 */
export type Command = 'serve' | 'help' | 'version' | 'healthcheck' | 'sandbox'

/** `gateway sandbox` options. */
export interface SandboxOptions {
  /** --port N (default 0: a free one). */
  port?: number
  /** --faults: the fault control API on (FAULTS_PORT, or --faults-port N). */
  faults: boolean
  faultsPort?: number
  /** --rate-limits: the rate limits on (off by default in a sandbox). */
  rateLimits: boolean
}

export const USAGE = `Usage: gateway [command]

Commands:
  (none)          run the gateway (settings from the environment, listed by --help)
  healthcheck     exit 0 if the gateway configured by the environment answers /health
                  (what the container's HEALTHCHECK runs; https when TLS_CERT_FILE is set)
  sandbox [--port N] [--faults] [--faults-port N] [--rate-limits]
                  a throwaway gateway for a test run: a fresh store in a temporary
                  directory (removed at SIGTERM or SIGINT), sandbox provisioning on,
                  rate limits off unless asked, on 127.0.0.1 (HOST to change) and a free
                  port unless given; prints ABLY_LOCAL_SANDBOX_URL=..., ABLY_KEY=... and,
                  with --faults, PROXY_CONTROL_HOST=... (the fault control API)
  -h, --help      print this help and every setting
  -V, --version   print the version
`

const COMMANDS: Record<string, Exclude<Command, 'sandbox'>> = {
  '-h': 'help',
  '--help': 'help',
  help: 'help',
  '-V': 'version',
  '-v': 'version',
  '--version': 'version',
  version: 'version',
  healthcheck: 'healthcheck',
}

const portArg = (v: string | undefined): number | undefined => {
  const n = Number(v)
  return v !== undefined && /^\d+$/.test(v) && n <= 65535 ? n : undefined
}

function parseSandbox(args: string[]): { command: 'sandbox'; sandbox: SandboxOptions } | { error: string } {
  const o: SandboxOptions = { faults: false, rateLimits: false }
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (a === '--faults') o.faults = true
    else if (a === '--rate-limits') o.rateLimits = true
    else if (a === '--port' || a === '--faults-port') {
      const n = portArg(args[++i])
      if (n === undefined) return { error: `${a} needs a port number (0-65535)` }
      if (a === '--port') o.port = n
      else o.faultsPort = n
    } else return { error: `unknown sandbox option: ${a}` }
  }
  return { command: 'sandbox', sandbox: o }
}

/** The command of `args` (the arguments after the program), or an error message. */
export function parseArgs(
  args: string[],
): { command: Exclude<Command, 'sandbox'> } | { command: 'sandbox'; sandbox: SandboxOptions } | { error: string } {
  if (args.length === 0) return { command: 'serve' }
  if (args[0] === 'sandbox') return parseSandbox(args.slice(1))
  const command = COMMANDS[args[0]!]
  if (!command) return { error: `unknown argument: ${args[0]}` }
  if (args.length > 1) return { error: `unexpected argument after ${args[0]}: ${args[1]}` }
  return { command }
}

export const helpText = () => `${USAGE}\nSettings (environment variables):\n\n${settingsTable()}\n`
