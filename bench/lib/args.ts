/**
 * Minimal `--flag value` / `--flag=value` / `--switch` parser shared by the bench entry points.
 * Unknown flags are an error, so a typo never silently runs the default.
 */
export type FlagKind = 'number' | 'string' | 'boolean' | 'strings'
type Value<K extends FlagKind> = K extends 'number'
  ? number
  : K extends 'boolean'
    ? boolean
    : K extends 'strings'
      ? string[]
      : string
export type Parsed<S extends Record<string, FlagKind>> = { [K in keyof S]?: Value<S[K]> } & { _: string[] }

export function parseFlags<S extends Record<string, FlagKind>>(argv: string[], spec: S): Parsed<S> {
  const out: Record<string, unknown> = { _: [] as string[] }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (!arg.startsWith('--')) {
      ;(out._ as string[]).push(arg)
      continue
    }
    const eq = arg.indexOf('=')
    const name = arg.slice(2, eq < 0 ? undefined : eq)
    const kind = spec[name]
    if (!kind)
      throw new Error(
        `unknown flag --${name} (known: ${Object.keys(spec)
          .map((k) => `--${k}`)
          .join(', ')})`,
      )
    if (kind === 'boolean') {
      out[name] = eq < 0 ? true : !['0', 'false', 'no'].includes(arg.slice(eq + 1))
      continue
    }
    const raw = eq < 0 ? argv[++i] : arg.slice(eq + 1)
    if (raw === undefined) throw new Error(`flag --${name} needs a value`)
    if (kind === 'number') {
      const n = Number(raw)
      if (!Number.isFinite(n) || n < 0) throw new Error(`flag --${name} must be a non-negative number, got ${raw}`)
      out[name] = n
    } else if (kind === 'strings') {
      out[name] = [...((out[name] as string[] | undefined) ?? []), raw]
    } else out[name] = raw
  }
  return out as Parsed<S>
}
