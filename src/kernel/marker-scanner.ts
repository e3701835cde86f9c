/**
 * Markers found in text that streams in chunks ending anywhere: the reasoning split (reasoning.ts) and the tool-call
 * split (tool-calls.ts) read model output through it. A tail that could begin a marker is held back until the next
 * chunk settles it; each chunk costs a few `indexOf` calls.
 */

/** Text between markers, or a marker, as the scanner finds them. */
export type MarkerToken = {marker: string} | {text: string}

/** Finds markers in streamed text, holding back a tail that may be the start of one. */
export class MarkerScanner {
  private pending = ''
  private readonly longest: number

  constructor(private readonly markers: readonly string[]) {
    this.longest = Math.max(...markers.map((marker) => marker.length))
  }

  push(chunk: string, out: MarkerToken[]): void {
    let text = this.pending + chunk
    for (;;) {
      let at = -1
      let found = ''
      for (const marker of this.markers) {
        const index = text.indexOf(marker)
        if (index >= 0 && (at < 0 || index < at)) [at, found] = [index, marker]
      }

      if (at < 0) break
      if (at > 0) out.push({text: text.slice(0, at)})
      out.push({marker: found})
      text = text.slice(at + found.length)
    }

    const held = this.heldFrom(text)
    if (held > 0) out.push({text: text.slice(0, held)})
    this.pending = text.slice(held)
  }

  /** What is still held back, as text: the output ended inside what looked like a marker. */
  flush(out: MarkerToken[]): void {
    if (this.pending) out.push({text: this.pending})
    this.pending = ''
  }

  private heldFrom(text: string): number {
    for (let index = Math.max(0, text.length - this.longest + 1); index < text.length; index++) {
      const tail = text.slice(index)
      if (this.markers.some((marker) => marker.startsWith(tail))) return index
    }

    return text.length
  }
}
