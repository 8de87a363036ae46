/** Structured JSON logs on stdout/stderr. Callers never pass secrets, query strings or headers. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent'
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void
  info(msg: string, fields?: Record<string, unknown>): void
  warn(msg: string, fields?: Record<string, unknown>): void
  error(msg: string, fields?: Record<string, unknown>): void
}

export function createLogger(level: LogLevel): Logger {
  const min = ORDER[level]
  const write = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < min) return
    const line = JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...fields })
    if (ORDER[lvl] >= ORDER.warn) process.stderr.write(line + '\n')
    else process.stdout.write(line + '\n')
  }
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
  }
}
