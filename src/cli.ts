import { settingsTable } from './config'

/**
 * The command line of `bun src/main.ts` and of the compiled `dist/gateway`. Settings come from
 * the environment only; the arguments choose what the process does, and anything unknown is
 * refused (exit 2) before a data dir or a port is touched.
 */
export type Command = 'serve' | 'help' | 'version' | 'healthcheck'

export const USAGE = `Usage: gateway [command]

Commands:
  (none)          run the gateway (settings from the environment, listed by --help)
  healthcheck     exit 0 if the gateway configured by the environment answers /health
                  (what the container's HEALTHCHECK runs; https when TLS_CERT_FILE is set)
  -h, --help      print this help and every setting
  -V, --version   print the version
`

const COMMANDS: Record<string, Command> = {
  '-h': 'help',
  '--help': 'help',
  help: 'help',
  '-V': 'version',
  '-v': 'version',
  '--version': 'version',
  version: 'version',
  healthcheck: 'healthcheck',
}

/** The command of `args` (the arguments after the program), or an error message. */
export function parseArgs(args: string[]): { command: Command } | { error: string } {
  if (args.length === 0) return { command: 'serve' }
  const command = COMMANDS[args[0]!]
  if (!command) return { error: `unknown argument: ${args[0]}` }
  if (args.length > 1) return { error: `unexpected argument after ${args[0]}: ${args[1]}` }
  return { command }
}

export const helpText = () => `${USAGE}\nSettings (environment variables):\n\n${settingsTable()}\n`
