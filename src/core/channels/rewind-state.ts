import type { Message } from '../types'
import type { VersionStore } from './ports'
import { asUpdateEntry, fold, isWhole, messageRef } from './versions'

/** Versions read per step while looking back, before the rewound entries, for a whole version. */
const LOOKBACK_CHUNK = 100

/**
 * What a rewind replays on a channel of a mutable namespace (`entries`: the rewound log entries,
 * oldest first): each message once, in its state as of the attach, at the place of its newest
 * entry among them, as the hosted service does (history shows each message once as well). A
 * message whose newest entry is an append shows as that entry made an update (action 1) of the
 * whole joined data, so a client that rewinds sees the full text, not the last fragment. The
 * state is folded from the entries themselves when they include a whole version of the message
 * (its original, an update or a delete); else from the versions recorded before them. Other
 * entries (presence) pass as they are.
 */
export async function rewoundState(
  store: VersionStore,
  appId: string,
  channel: string,
  entries: Message[],
): Promise<Message[]> {
  const isMessage = (m: Message) => m.kind === undefined || m.kind === 'mutation'
  const newest = new Map<string, number>()
  entries.forEach((m, i) => {
    if (isMessage(m)) newest.set(messageRef(m).serial, i)
  })
  if (newest.size === entries.filter(isMessage).length && !entries.some((m) => !isWhole(m))) return entries
  const out: Message[] = []
  for (let i = 0; i < entries.length; i++) {
    const m = entries[i]!
    if (!isMessage(m)) out.push(m)
    else if (newest.get(messageRef(m).serial) === i)
      out.push(isWhole(m) ? m : await appendedState(store, appId, channel, entries, i))
  }
  return out
}

/** The append entry #i with the message's joined state as of it (an update entry). */
async function appendedState(
  store: VersionStore,
  appId: string,
  channel: string,
  entries: Message[],
  i: number,
): Promise<Message> {
  const entry = entries[i]!
  const ref = entry.mutation!.serial
  // the message's entries up to #i, newest first, back to a whole one
  const chain: Message[] = []
  let base: Message | undefined
  for (let j = i; j >= 0 && !base; j--) {
    const m = entries[j]!
    if ((m.kind === undefined || m.kind === 'mutation') && messageRef(m).serial === ref) {
      if (isWhole(m)) base = m
      else chain.push(m)
    }
  }
  if (!base) {
    // recorded versions before the oldest rewound entry of the message
    let cursor: string | undefined = chain[chain.length - 1]!.serial
    while (!base) {
      const page = await store.versions(appId, channel, ref, { cursor, limit: LOOKBACK_CHUNK, direction: 'backwards' })
      for (const v of page) {
        if (isWhole(v)) {
          base = v
          break
        }
        chain.push(v)
      }
      if (page.length < LOOKBACK_CHUNK) break
      cursor = page[page.length - 1]!.serial
    }
  }
  if (!base) return entry // not recorded yet (the change is being recorded): the fragment as it is
  let state: Message = base.kind === 'mutation' ? fold(base, base) : base
  for (let k = chain.length - 1; k >= 0; k--) state = fold(state, chain[k]!)
  return asUpdateEntry(state, entry)
}
