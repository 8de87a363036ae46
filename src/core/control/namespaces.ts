import type { ControlStore } from '../ports'
import type { Namespace } from '../types'
import { namespaceOf } from '../model/names'
import { isServiceChannel } from '../model/sub-channels'

/** Namespace rules per app, cached until the control store reports a change. */
export class Namespaces {
  private cache = new Map<string, Map<string, Namespace>>()

  constructor(private readonly control: ControlStore) {
    control.onChange((e) => {
      if (e.appId) this.cache.delete(e.appId)
      else this.cache.clear()
    })
  }

  async forApp(appId: string): Promise<Map<string, Namespace>> {
    let m = this.cache.get(appId)
    if (!m) {
      m = new Map((await this.control.listNamespaces(appId)).map((ns) => [ns.id, ns]))
      this.cache.set(appId, m)
    }
    return m
  }

  /** The namespace rule that applies to `channel`, if any. */
  async of(appId: string, channel: string): Promise<Namespace | undefined> {
    const id = namespaceOf(baseName(channel))
    if (id === undefined) return undefined
    const m = this.cache.get(appId) ?? (await this.forApp(appId))
    return m.get(id)
  }

  /**
   * Whether a channel keeps history for the persisted window: channels of a `persisted` namespace,
   * of a `mutableMessages` one (as the hosted service persists them: changes need the message), and
   * the service sub-channels (`room::$chat`, `ns::$objects:...`), whose history is their state
   * (the Spaces sub-channels `::$space` and `::$cursors` follow the rules of their base name).
   */
  async isPersisted(appId: string, channel: string): Promise<boolean> {
    return this.persistedCached(appId, channel) ?? persists(await this.of(appId, channel))
  }

  /** Synchronous answer when the app's rules are cached (the publish hot path), else undefined. */
  persistedCached(appId: string, channel: string): boolean | undefined {
    if (isServiceChannel(channel)) return true
    const rule = this.known(appId, channel)
    return rule === undefined ? undefined : persists(rule ?? undefined)
  }

  /** The rule of `channel` when the app's rules are cached (a subscription has read them: `of`), else undefined. */
  cached(appId: string, channel: string): Namespace | undefined {
    return this.known(appId, channel) ?? undefined
  }

  /** Synchronous `isMutable` when the app's rules are cached, else undefined. */
  mutableCached(appId: string, channel: string): boolean | undefined {
    const rule = this.known(appId, channel)
    return rule === undefined ? undefined : rule?.mutableMessages === true
  }

  /** The rule of `channel` as far as the cache knows: null when none applies, undefined while the app's rules are not cached. */
  private known(appId: string, channel: string): Namespace | null | undefined {
    const id = namespaceOf(baseName(channel))
    if (id === undefined) return null
    const m = this.cache.get(appId)
    return m ? (m.get(id) ?? null) : undefined
  }

  /** Whether messages of the channel may be updated, deleted and appended to (`mutableMessages`). */
  async isMutable(appId: string, channel: string): Promise<boolean> {
    return (await this.of(appId, channel))?.mutableMessages === true
  }
}

const persists = (ns: Namespace | undefined): boolean => ns?.persisted === true || ns?.mutableMessages === true

/** A sub-channel's base name (`deck` of `deck::$cursors`): its namespace is the base's. */
const baseName = (channel: string): string => {
  const i = channel.indexOf('::$')
  return i < 0 ? channel : channel.slice(0, i)
}
