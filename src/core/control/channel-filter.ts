import { RE2JS } from 're2js'
import { GatewayError } from '../../errors'

/**
 * Channel filters of rules are tenant-written regular expressions run against channel names on
 * the publish path, so they are compiled by RE2 (re2js, pure JS): matching takes time linear in
 * the channel name and the pattern's program, never backtracking (`^(a+)+$` costs what `^a+$`
 * does). What RE2 cannot express in linear time (backreferences, lookaround) is refused. The
 * pattern's length and compiled size are capped so that the worst case stays small: an NFA step
 * costs per program instruction, and a channel name is at most 1,024 characters.
 */
export const MAX_FILTER_LENGTH = 256
/** Program instructions one filter may compile to (`[a-z]{100}` is about 100). */
export const MAX_FILTER_PROGRAM = 200
/** Program instructions all filters of one app may add up to: bounds routing a publish, whatever the rule count. */
export const MAX_APP_FILTER_PROGRAM = 1000

export interface ChannelFilter {
  /** Whether the channel name matches anywhere (unanchored, as RegExp.test). */
  test(channel: string): boolean
  /** The compiled program's size, what a match costs per character. */
  size: number
}

const bad = (m: string) => new GatewayError(40000, m)

/** Compiles a rule's channel filter; a pattern that is too long, too large or not RE2 syntax is 400 / 40000. */
export function compileChannelFilter(pattern: string): ChannelFilter {
  if (pattern.length > MAX_FILTER_LENGTH)
    throw bad(`source.channelFilter is longer than ${MAX_FILTER_LENGTH} characters`)
  let re: RE2JS
  try {
    re = RE2JS.compile(pattern)
  } catch (e) {
    const why = e instanceof Error ? e.message.replace(/^error parsing regexp: /, '') : 'invalid'
    throw bad(
      `source.channelFilter is not a valid RE2 regular expression (${why}); ` +
        'backreferences and lookaround are not supported',
    )
  }
  const size = re.programSize()
  if (size > MAX_FILTER_PROGRAM)
    throw bad(
      `source.channelFilter is too complex: it compiles to ${size} instructions, at most ${MAX_FILTER_PROGRAM} ` +
        'are allowed (use fewer or smaller repetitions)',
    )
  return { test: (channel) => re.test(channel), size }
}
