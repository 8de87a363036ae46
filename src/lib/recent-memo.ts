/**
 * Values made once per key object and shared by the key's readers, for keys read in bursts: a
 * delivered batch, whose every subscriber reads the same array one after the other in one
 * event-loop turn. The last few keys are held in a small array and found by identity (no hashing);
 * an entry that was read again before it leaves that array goes on to a weak map then, so a key
 * shared by many readers stays shared however its reads interleave with other keys'. A key read
 * once (a batch with a single subscriber, the common case) so never costs a weak map's insert,
 * which in a loop takes ~75-150 ns against ~20 for this (docs/performance.md, issue 44).
 *
 * Holds up to `size` keys and their values strongly, and only until the current turn's
 * synchronous work ends (a microtask lets them go, the shared ones to the weak map): a large
 * batch's text is not kept alive past its delivery by this.
 */
export class RecentMemo<K extends object, V> {
  private readonly keys: Array<K | undefined>
  private readonly values: Array<V | undefined>
  /** Per slot: read again since it was set (it goes on to the weak map when replaced). */
  private readonly shared: Uint8Array
  private next = 0
  private readonly spilled = new WeakMap<K, V>()
  /** A microtask will let the keys held go (`clear`). */
  private clearing = false
  private readonly clear = () => {
    this.clearing = false
    for (let i = 0; i < this.keys.length; i++) this.drop(i)
    this.next = 0
  }

  constructor(size = 4) {
    this.keys = new Array<K | undefined>(size).fill(undefined)
    this.values = new Array<V | undefined>(size).fill(undefined)
    this.shared = new Uint8Array(size)
  }

  get(key: K): V | undefined {
    const keys = this.keys
    for (let i = 0; i < keys.length; i++)
      if (keys[i] === key) {
        this.shared[i] = 1
        return this.values[i]
      }
    return this.spilled.get(key)
  }

  /** Empties slot `i`; its key goes on to the weak map when it was read again. */
  private drop(i: number) {
    const key = this.keys[i]
    if (key === undefined) return
    if (this.shared[i]) this.spilled.set(key, this.values[i]!)
    this.keys[i] = undefined
    this.values[i] = undefined
    this.shared[i] = 0
  }

  /** Sets `key`'s value (a key not found by `get`) and returns it. */
  set(key: K, value: V): V {
    const i = this.next
    this.next = i + 1 === this.keys.length ? 0 : i + 1
    this.drop(i)
    this.keys[i] = key
    this.values[i] = value
    this.shared[i] = 0
    if (!this.clearing) {
      this.clearing = true
      queueMicrotask(this.clear)
    }
    return value
  }
}
