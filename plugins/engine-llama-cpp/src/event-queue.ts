/** Bridges node-llama-cpp's callbacks to an async iterator that a consumer pulls at its own pace. */
export class EventQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = []
  private finished = false
  private failure: unknown
  private wake?: () => void

  push(item: T): void {
    this.items.push(item)
    this.notify()
  }

  end(): void {
    this.finished = true
    this.notify()
  }

  fail(error: unknown): void {
    this.failure = error ?? new Error('generation failed')
    this.finished = true
    this.notify()
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    while (true) {
      if (this.items.length > 0) {
        yield this.items.shift()!
        continue
      }

      if (this.failure) throw this.failure
      if (this.finished) return
      await new Promise<void>((resolve) => {
        this.wake = resolve
      })
    }
  }

  private notify() {
    this.wake?.()
    this.wake = undefined
  }
}
