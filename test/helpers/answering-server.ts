/** A real HTTP server on this machine that answers each request, once its body is read, as the test last told it. */
import {once} from 'node:events'
import {createServer, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

export interface AnsweringServer {
  port: number
  baseUrl: string
  /** How the next requests are answered. */
  answer: (response: ServerResponse) => void
  /** The body of the last request, as text. */
  lastBody?: string
  close(): void
}

export async function answeringServer(): Promise<AnsweringServer> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.once('end', () => {
      answering.lastBody = Buffer.concat(chunks).toString('utf8')
      answering.answer(response)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const {port} = server.address() as AddressInfo
  const answering: AnsweringServer = {
    answer: () => {},
    baseUrl: `http://127.0.0.1:${port}`,
    close() {
      server.closeAllConnections()
      server.close()
    },
    port,
  }
  return answering
}
