/**
 * ExternalProgram without a real program, for what the e2e tests cannot see from outside: the port and environment
 * the engine's command is given (devices as CUDA_VISIBLE_DEVICES), and how the OpenAI-compatible operations turn
 * their payload into a request and the streamed chunks into generation events (tool calls included). The program's
 * HTTP side is a real server on the port the test hands out.
 */
import {expect} from 'chai'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'

import type {LoadRequest} from '../../src/kernel/contracts.js'
import type {ExternalEngine, ExternalLaunchContext} from '../../src/kernel/external-engine.js'
import type {ProgramSpawnOptions, RunningProgram} from '../../src/model-process/program-spawner.js'

import {openAICompatibleOperations} from '../../src/kernel/openai-upstream.js'
import {ExternalProgram} from '../../src/model-process/external-program.js'

const request = (extra: Record<string, unknown> = {}) =>
  ({family: {} as never, modelName: 'm', modelPath: '/weights', modelType: 'LLM', modelUid: 'm-1', parameters: {}, spec: {} as never, ...extra}) as LoadRequest

/** A program that runs until it is signalled; what it was started with is kept. */
function spawner() {
  const started: ProgramSpawnOptions[] = []
  const signals: string[] = []
  const spawn = (options: ProgramSpawnOptions): RunningProgram => {
    started.push(options)
    let exit: (value: {exitCode: number | null; signal: string | null}) => void = () => {}
    const exited = new Promise<{exitCode: number | null; signal: string | null}>((resolve) => (exit = resolve))
    return {
      exited,
      kill(signal) {
        signals.push(signal)
        exit({exitCode: null, signal})
      },
      outputTail: () => [],
      pid: 4242,
    }
  }

  return {signals, spawn, started}
}

describe('ExternalProgram', () => {
  let server: Server
  let port: number
  let upstream: {path?: string; body?: any}
  let reply: (response: ServerResponse) => void

  before(async () => {
    server = createServer((req: IncomingMessage, response: ServerResponse) => {
      if (req.url === '/health') return response.end('ok')
      let text = ''
      req.on('data', (chunk) => (text += chunk))
      req.on('end', () => {
        upstream = {body: JSON.parse(text), path: req.url}
        reply(response)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as {port: number}).port
  })

  after(() => server.close())

  const engine = (contexts: ExternalLaunchContext[]): ExternalEngine => ({
    command(_request, context) {
      contexts.push(context)
      return {args: ['--port', String(context.port)], env: {EXTRA: '1'}, file: 'serve-model'}
    },
    health: {intervalMs: 10, path: '/health', timeoutMs: 5000},
    info: () => ({abilities: ['chat']}),
    operations: openAICompatibleOperations(),
  })

  it('starts the command on the port it was given, with the devices of the load request as CUDA_VISIBLE_DEVICES', async () => {
    const contexts: ExternalLaunchContext[] = []
    const {signals, spawn, started} = spawner()
    const program = new ExternalProgram('m-1', engine(contexts), {env: {SERVICE_LOG_LEVEL: 'info'}, freePort: async () => port, logFile: '/dev/null', spawn})
    await program.load(request({devices: [0, 2]}))
    expect(program.state).to.equal('ready')
    expect(program.info).to.deep.equal({abilities: ['chat']})
    expect(contexts[0]).to.deep.equal({baseUrl: `http://127.0.0.1:${port}`, devices: [0, 2], env: {CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: '0,2', SERVICE_LOG_LEVEL: 'info'}, port})
    expect(started[0]).to.deep.include({args: ['--port', String(port)], file: 'serve-model', logFile: '/dev/null'})
    // The same variables as a Node model process gets: CUDA numbers GPUs as nvidia-smi does only in PCI bus order.
    expect(started[0].env).to.deep.equal({CUDA_DEVICE_ORDER: 'PCI_BUS_ID', CUDA_VISIBLE_DEVICES: '0,2', EXTRA: '1', SERVICE_LOG_LEVEL: 'info'})
    await program.dispose()
    expect(signals).to.deep.equal(['SIGTERM'])
    expect(program.state).to.equal('disposed')

    const unplaced = new ExternalProgram('m-2', engine(contexts), {freePort: async () => port, logFile: '/dev/null', spawn})
    await unplaced.load(request())
    expect(contexts[1].devices).to.deep.equal([])
    expect(started[1].env).to.not.have.property('CUDA_VISIBLE_DEVICES')
    await unplaced.dispose()
  })

  it("sends chat as an OpenAI streaming request and yields the server's text and tool calls as generation events", async () => {
    const {spawn} = spawner()
    const program = new ExternalProgram('m-3', engine([]), {freePort: async () => port, logFile: '/dev/null', spawn})
    await program.load(request())
    const chunks = [
      {choices: [{delta: {content: 'Let me look.', role: 'assistant'}, index: 0}]},
      {choices: [{delta: {tool_calls: [{function: {arguments: '', name: 'weather'}, id: 'call_1', index: 0, type: 'function'}]}, index: 0}]},
      {choices: [{delta: {tool_calls: [{function: {arguments: '{"city":'}, index: 0}]}, index: 0}]},
      {choices: [{delta: {tool_calls: [{function: {arguments: '"Oslo"}'}, index: 0}]}, index: 0}]},
      {choices: [{delta: {}, finish_reason: 'tool_calls', index: 0}]},
      {choices: [], usage: {completion_tokens: 9, prompt_tokens: 12}},
    ]
    reply = (response) => {
      response.writeHead(200, {'content-type': 'text/event-stream'})
      response.end([...chunks.map((chunk) => JSON.stringify(chunk)), '[DONE]'].map((data) => `data: ${data}\n\n`).join(''))
    }

    const payload = {
      maxTokens: 20,
      messages: [
        {content: 'Weather in Oslo?', role: 'user'},
        {content: '', role: 'assistant', toolCalls: [{arguments: '{}', id: 'call_0', name: 'clock'}]},
        {content: '12:00', role: 'tool', toolCallId: 'call_0'},
      ],
      temperature: 0.5,
      toolChoice: {name: 'weather'},
      tools: [{name: 'weather', parameters: {type: 'object'}}],
    }
    const events = []
    for await (const event of program.invoke('chat', payload, new AbortController().signal)) events.push(event)
    expect(upstream.path).to.equal('/v1/chat/completions')
    expect(upstream.body).to.deep.equal({
      max_tokens: 20,
      messages: [
        {content: 'Weather in Oslo?', role: 'user'},
        {content: '', role: 'assistant', tool_calls: [{function: {arguments: '{}', name: 'clock'}, id: 'call_0', type: 'function'}]},
        {content: '12:00', role: 'tool', tool_call_id: 'call_0'},
      ],
      model: 'm-3',
      stream: true,
      stream_options: {include_usage: true},
      temperature: 0.5,
      tool_choice: {function: {name: 'weather'}, type: 'function'},
      tools: [{function: {name: 'weather', parameters: {type: 'object'}}, type: 'function'}],
    })
    expect(events).to.deep.equal([
      {text: 'Let me look.', type: 'text'},
      {index: 0, name: 'weather', type: 'tool_call'},
      {index: 0, text: '{"city":', type: 'tool_arguments'},
      {index: 0, text: '"Oslo"}', type: 'tool_arguments'},
      {completionTokens: 9, finishReason: 'tool_calls', promptTokens: 12, type: 'done'},
    ])
    await program.dispose()
  })

  it("splits the tool calls out of a server's raw text by the model's format, as the transformers host's output is", async () => {
    const {spawn} = spawner()
    const program = new ExternalProgram('m-10', engine([]), {freePort: async () => port, logFile: '/dev/null', spawn})
    await program.load(request({family: {model_name: 'qwen2.5-instruct', tool_parser: 'qwen'}}))
    const pieces = ['Checking.\n<tool', '_call>\n{"name": "weather", "argu', 'ments": {"city": "Os', 'lo"}}\n</tool_call>']
    const chunks = [
      {choices: [{delta: {content: '', role: 'assistant'}, index: 0}], prompt: {tail: '<|im_start|>assistant\n', tokens: 40}},
      ...pieces.map((content) => ({choices: [{delta: {content}, index: 0}]})),
      {choices: [{delta: {}, finish_reason: 'stop', index: 0}]},
      {choices: [], usage: {completion_tokens: 20, prompt_tokens: 40}},
    ]
    reply = (response) => {
      response.writeHead(200, {'content-type': 'text/event-stream'})
      response.end([...chunks.map((chunk) => JSON.stringify(chunk)), '[DONE]'].map((data) => `data: ${data}\n\n`).join(''))
    }

    const chat = async (toolChoice: string) => {
      const events = []
      const payload = {messages: [{content: 'Weather in Oslo?', role: 'user'}], toolChoice, tools: [{name: 'weather', parameters: {type: 'object'}}]}
      for await (const event of program.invoke('chat', payload, new AbortController().signal)) events.push(event)
      return events
    }

    expect(await chat('auto')).to.deep.equal([
      {promptTail: '<|im_start|>assistant\n', promptTokens: 40, type: 'start'},
      {text: 'Checking.', type: 'text'},
      {index: 0, name: 'weather', type: 'tool_call'},
      // The arguments as the server streamed them, a piece at a time.
      {index: 0, text: '{"city": "Os', type: 'tool_arguments'},
      {index: 0, text: 'lo"}', type: 'tool_arguments'},
      {completionTokens: 20, finishReason: 'tool_calls', promptTokens: 40, type: 'done'},
    ])
    // Asked not to call tools, the model's text is its answer, whatever it holds.
    expect((await chat('none')).filter((event: any) => event.type === 'text').map((event: any) => event.text).join('')).to.equal(pieces.join(''))
    await program.dispose()
  })

  it("passes on the prompt tokens the server says it took from its cache (vLLM's and SGLang's prefix caches)", async () => {
    const {spawn} = spawner()
    const program = new ExternalProgram('m-9', engine([]), {freePort: async () => port, logFile: '/dev/null', spawn})
    await program.load(request())
    const chunks = [{choices: [{delta: {content: 'Hi'}, finish_reason: 'stop', index: 0}]}, {choices: [], usage: {completion_tokens: 1, prompt_tokens: 40, prompt_tokens_details: {cached_tokens: 32}}}]
    reply = (response) => {
      response.writeHead(200, {'content-type': 'text/event-stream'})
      response.end([...chunks.map((chunk) => JSON.stringify(chunk)), '[DONE]'].map((data) => `data: ${data}\n\n`).join(''))
    }

    const events = []
    for await (const event of program.invoke('chat', {messages: [{content: 'Hello again', role: 'user'}]}, new AbortController().signal)) events.push(event)
    expect(events.at(-1)).to.deep.equal({cachedTokens: 32, completionTokens: 1, finishReason: 'stop', promptTokens: 40, type: 'done'})
    await program.dispose()
  })

  it('sends a chat without tools with neither tools nor a tool choice, which vLLM would refuse', async () => {
    const {spawn} = spawner()
    const program = new ExternalProgram('m-5', engine([]), {freePort: async () => port, logFile: '/dev/null', spawn})
    await program.load(request())
    reply = (response) => {
      response.writeHead(200, {'content-type': 'text/event-stream'})
      response.end(`data: ${JSON.stringify({choices: [{delta: {content: 'Hi'}, finish_reason: 'stop', index: 0}]})}\n\ndata: [DONE]\n\n`)
    }

    const payload = {maxTokens: 5, messages: [{content: 'Hello', role: 'user' as const}], toolChoice: 'auto' as const, tools: []}
    for await (const _ of program.invoke('chat', payload, new AbortController().signal));
    expect(upstream.body).to.deep.equal({max_tokens: 5, messages: [{content: 'Hello', role: 'user'}], model: 'm-5', stream: true, stream_options: {include_usage: true}})
    await program.dispose()
  })

  it('keeps the connection to the server for the next request, reading each reply to its end after [DONE]', async () => {
    // A server of its own, so that the connections counted are this program's alone.
    let connections = 0
    const own = createServer((req, response) => {
      if (req.url === '/health') return response.end('ok')
      req.resume()
      req.on('end', () => {
        response.writeHead(200, {'content-type': 'text/event-stream'})
        response.write(`data: ${JSON.stringify({choices: [{delta: {content: 'Hi'}, finish_reason: 'stop', index: 0}]})}\n\ndata: [DONE]\n\n`)
        // The reply's end comes after [DONE], as a server writes its last chunk: the reader must wait for it.
        setTimeout(() => response.end(), 20)
      })
    })
    own.on('connection', () => connections++)
    await new Promise<void>((resolve) => own.listen(0, '127.0.0.1', resolve))
    const {spawn} = spawner()
    const program = new ExternalProgram('m-6', engine([]), {freePort: async () => (own.address() as {port: number}).port, logFile: '/dev/null', spawn})
    await program.load(request())
    const chat = async () => {
      for await (const _ of program.invoke('chat', {messages: [{content: 'Hello', role: 'user'}]}, new AbortController().signal));
      // The HTTP agent puts the connection back in its pool just after the reply's end is read.
      await new Promise((resolve) => setTimeout(resolve, 10))
    }

    try {
      await chat()
      const opened = connections
      await chat()
      await chat()
      expect(connections - opened, 'connections opened after the first reply').to.equal(0)
    } finally {
      await program.dispose()
      own.closeAllConnections()
      own.close()
    }
  })

  it('reads events however the writes split them, a character split between two included, and fails a reply that ends before [DONE]', async () => {
    const {spawn} = spawner()
    const program = new ExternalProgram('m-7', engine([]), {freePort: async () => port, logFile: '/dev/null', spawn})
    await program.load(request())
    const events = [{choices: [{delta: {content: 'Café '}, index: 0}]}, {choices: [{delta: {content: 'au lait'}, finish_reason: 'stop', index: 0}]}, {choices: [], usage: {completion_tokens: 2, prompt_tokens: 3}}]
    const bytes = Buffer.from([...events.map((event) => JSON.stringify(event)), '[DONE]'].map((data) => `data: ${data}\n\n`).join(''))
    const chat = async () => {
      const received: unknown[] = []
      for await (const event of program.invoke('chat', {messages: [{content: 'Hello', role: 'user'}]}, new AbortController().signal)) received.push(event)
      return received
    }

    try {
      // A write ends inside the é (two bytes in UTF-8), the others are seven bytes each, every one flushed on its own.
      const cuts = [bytes.indexOf(Buffer.from('é')) + 1]
      while (cuts.at(-1)! < bytes.length) cuts.push(cuts.at(-1)! + 7)
      reply = (response) => {
        response.writeHead(200, {'content-type': 'text/event-stream'})
        let at = 0
        const next = () => (at < bytes.length ? response.write(bytes.subarray(at, (at = cuts.shift()!)), () => setImmediate(next)) : response.end())
        next()
      }

      expect(await chat()).to.deep.equal([
        {text: 'Café ', type: 'text'},
        {text: 'au lait', type: 'text'},
        {completionTokens: 2, finishReason: 'stop', promptTokens: 3, type: 'done'},
      ])
      reply = (response) => {
        response.writeHead(200, {'content-type': 'text/event-stream'})
        response.end(`data: ${JSON.stringify(events[0])}\n\n`)
      }

      const failure = await chat().catch((error) => error)
      expect(failure).to.deep.include({code: 'internal_error', status: 502})
      expect(failure.message).to.include('before [DONE]')
    } finally {
      await program.dispose()
    }
  })

  it("answers the server's refusal in the service's words: its 4xx stays a 4xx, and an operation it lacks is a 400", async () => {
    const {spawn} = spawner()
    const program = new ExternalProgram('m-4', engine([]), {freePort: async () => port, logFile: '/dev/null', spawn})
    await program.load(request())
    reply = (response) => {
      response.writeHead(400, {'content-type': 'application/json'})
      response.end(JSON.stringify({error: {message: 'prompt is too long for this model'}}))
    }

    const failure = await (async () => {
      for await (const _ of program.invoke('complete', {prompt: 'x'}, new AbortController().signal));
    })().catch((error) => error)
    expect(failure).to.deep.include({code: 'invalid_request', message: "the model's server answered 400: prompt is too long for this model", status: 400})
    const unsupported = await (async () => {
      for await (const _ of program.invoke('embed', {inputs: []}, new AbortController().signal));
    })().catch((error) => error)
    expect(unsupported).to.deep.include({code: 'unsupported', status: 400})
    await program.dispose()
  })
})
