/**
 * Runs tasks one after another per key (tasks of different keys run concurrently). A key holds
 * memory only while it has tasks queued or running.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<void>>()

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(key) ?? Promise.resolve()).then(task)
    const tail = result.then(
      () => {},
      () => {},
    )
    this.tails.set(key, tail)
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    })
    return result
  }

  /** Keys with tasks queued or running. */
  get size(): number {
    return this.tails.size
  }
}
