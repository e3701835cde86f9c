import {EventSourceParserStream} from 'eventsource-parser/stream'

/**
 * The `data:` payloads of a server-sent event stream, one string per event, as they arrive. The parsing is
 * eventsource-parser's, which follows the WHATWG rules (CRLF, CR or LF line ends, one optional space after
 * the colon, multi-line data) on web streams, so it works in a browser as in Node.
 */
export async function* readEventData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  // The cast: the DOM library types TextDecoderStream's input as any BufferSource, which TypeScript does not match to Uint8Array.
  const reader = body.pipeThrough(new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>).pipeThrough(new EventSourceParserStream()).getReader()
  try {
    while (true) {
      const {done, value} = await reader.read()
      if (done) return
      if (value.data) yield value.data
    }
  } finally {
    // Stops the HTTP response when the caller leaves early (a `break`); a stream that already failed has
    // nothing left to stop, and its own error is the one that propagates.
    await reader.cancel().catch(() => undefined)
  }
}
