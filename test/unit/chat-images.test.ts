/**
 * Pictures in chat requests, through the OpenAI and Anthropic routes' own schemas and handlers with a stand-in model:
 * the parts the engine is given, and every refusal before any engine work (a model that cannot see, an engine that
 * cannot take pictures, bounds, bytes that are no picture, URLs at this machine's addresses unless the operator lists
 * the host, also after a redirect). Pictures at URLs come from a real HTTP server on this machine. Then how an
 * OpenAI-compatible engine (vLLM, SGLang, the transformers host) receives them: OpenAI's image_url parts, in place.
 */
import {expect} from 'chai'
import {once} from 'node:events'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'

import type {KernelApi, ModelDirectory, RouteDefinition, RouteRequest} from '../../src/kernel/contracts.js'

import {anthropicRoutes} from '../../plugins/model-llm/src/anthropic.js'
import {chatRoute} from '../../plugins/model-llm/src/chat.js'
import {ollamaRoutes} from '../../plugins/model-llm/src/ollama.js'
import {IMAGE_INPUT_LIMITS, imageReader, isSpecialAddress} from '../../src/kernel/image-inputs.js'
import {createKernelApi} from '../../src/kernel/kernel.js'
import {openAICompatibleOperations} from '../../src/kernel/openai-upstream.js'
import {answeringServer} from '../helpers/answering-server.js'
import {solidPng} from '../helpers/media.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const PNG = solidPng(4, 4, [255, 0, 0])
const dataUrl = (bytes: Buffer, type = 'image/png') => `data:${type};base64,${bytes.toString('base64')}`

function standIn(abilities: string[], engine: string) {
  const payloads: Array<Record<string, any>> = []
  const models = {
    get: () => ({
      abilities,
      description: {model_engine: engine},
      async *invoke(_operation: string, payload: Record<string, unknown>) {
        payloads.push(payload)
        yield {promptTokens: 3, type: 'start'}
        yield {completionTokens: 1, finishReason: 'stop', promptTokens: 3, type: 'done'}
      },
      modelName: 'seer',
      modelType: 'LLM',
      uid: 'seer',
    }),
    list: () => [],
  } as unknown as ModelDirectory
  return {models, payloads}
}

const ROUTES = {
  anthropic: (api: KernelApi) => anthropicRoutes(api).find((each) => each.path === '/anthropic/v1/messages')!,
  chat: chatRoute,
  ollamaChat: (api: KernelApi) => ollamaRoutes(api).find((each) => each.path === '/api/chat')!,
  ollamaGenerate: (api: KernelApi) => ollamaRoutes(api).find((each) => each.path === '/api/generate')!,
}

async function send(api: KernelApi, route: keyof typeof ROUTES, body: Record<string, unknown>, abilities = ['chat', 'vision'], engine = 'transformers') {
  const definition = ROUTES[route](api) as RouteDefinition<unknown>
  const {models, payloads} = standIn(abilities, engine)
  const parsed = definition.body!.parse({...(route.startsWith('ollama') ? {} : {max_tokens: 4}), model: 'seer', ...body})
  await definition.handler({body: parsed, models, signal: new AbortController().signal} as unknown as RouteRequest<unknown>)
  return payloads[0]
}

async function refusal(promise: Promise<unknown>): Promise<{message: string; param?: string; status: number}> {
  const outcome = await promise.then(
    () => undefined,
    (error: {message: string; param?: string; status: number}) => error,
  )
  if (!outcome) throw new Error('expected a 400, and the request was let through')
  expect(outcome.status, outcome.message).to.equal(400)
  return outcome
}

const shown = (url: string) => ({messages: [{content: [{text: 'What is this?', type: 'text'}, {image_url: {url}, type: 'image_url'}], role: 'user'}]})

describe('pictures in chat requests', () => {
  let server: Server
  let port: number
  before(async () => {
    server = createServer((request, response) => {
      if (request.url === '/red.png') response.writeHead(200, {'content-type': 'image/png'}).end(PNG)
      else if (request.url === '/redirect') response.writeHead(302, {location: `http://127.0.0.1:${port}/red.png`}).end()
      else if (request.url?.startsWith('/hop/')) response.writeHead(302, {location: `/hop/${Number(request.url.slice(5)) + 1}`}).end()
      // A picture that never ends, without saying its length, and one that never comes.
      else if (request.url === '/endless.png') {
        response.writeHead(200, {'content-type': 'image/png'})
        response.write(PNG)
        const more = setInterval(() => (response.destroyed ? clearInterval(more) : response.write(Buffer.alloc(1024))), 1)
      } else if (request.url === '/silent.png') response.writeHead(200, {'content-type': 'image/png'})
      else response.writeHead(404).end()
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    port = (server.address() as AddressInfo).port
  })
  after(() => {
    server.closeAllConnections()
    server.close()
  })

  const api = createKernelApi('0.0.0', quiet)
  const operatorApi = createKernelApi('0.0.0', quiet, {allowedImageHosts: ['localhost']})

  it("gives the engine the text and pictures of a turn in order, from OpenAI parts, Anthropic blocks and Ollama's images", async () => {
    const openai = await send(api, 'chat', shown(dataUrl(PNG)))
    expect(openai.messages[0]).to.deep.equal({
      content: 'What is this?',
      parts: [{text: 'What is this?', type: 'text'}, {image: {data: PNG.toString('base64'), mediaType: 'image/png'}, type: 'image'}],
      role: 'user',
    })
    const block = {source: {data: PNG.toString('base64'), media_type: 'image/png', type: 'base64'}, type: 'image'}
    const anthropic = await send(api, 'anthropic', {messages: [{content: [block, {text: 'And this?', type: 'text'}], role: 'user'}]})
    expect(anthropic.messages[0].parts).to.deep.equal([{image: {data: PNG.toString('base64'), mediaType: 'image/png'}, type: 'image'}, {text: 'And this?', type: 'text'}])
    // Ollama's images, base64, which its templates show before the text.
    const ollama = await send(api, 'ollamaChat', {messages: [{content: 'Which colour?', images: [PNG.toString('base64')], role: 'user'}], stream: false})
    expect(ollama.messages[0].parts).to.deep.equal([{image: {data: PNG.toString('base64'), mediaType: 'image/png'}, type: 'image'}, {text: 'Which colour?', type: 'text'}])
    const generated = await send(api, 'ollamaGenerate', {images: [PNG.toString('base64')], prompt: 'Which colour?', stream: false})
    expect(generated.messages[0]).to.deep.include({content: 'Which colour?', role: 'user'})
    const ollamaBlind = await refusal(send(api, 'ollamaGenerate', {images: [PNG.toString('base64')], prompt: 'Which colour?', stream: false}, ['chat']))
    expect(ollamaBlind.param).to.equal('images[0]')
    const text = await send(api, 'chat', {messages: [{content: [{text: 'Only words.', type: 'text'}], role: 'user'}]})
    expect(text.messages[0]).to.deep.equal({content: 'Only words.', role: 'user'})
  })

  it('refuses a picture for a model without vision, and one for an engine that cannot take pictures, naming the part', async () => {
    const blind = await refusal(send(api, 'chat', shown(dataUrl(PNG)), ['chat']))
    expect(blind.param).to.equal('messages[0].content[1].image_url.url')
    expect(blind.message).to.match(/cannot see images: it has no vision ability/)
    const llama = await refusal(send(api, 'chat', shown(dataUrl(PNG)), ['chat', 'vision'], 'llama.cpp'))
    expect(llama.message).to.match(/runs on the llama\.cpp engine, which cannot take images; launch it on an engine that can: transformers, vLLM or SGLang/)
    const anthropic = await refusal(send(api, 'anthropic', {messages: [{content: [{source: {type: 'url', url: 'https://example.com/a.png'}, type: 'image'}], role: 'user'}]}, ['chat']))
    expect(anthropic.param).to.equal('messages[0].content[0].source.url')
  })

  it('refuses oversized pictures, too many, bytes that are no picture, and a media type the bytes contradict', async () => {
    const big = Buffer.concat([PNG, Buffer.alloc(IMAGE_INPUT_LIMITS.bytesPerImage)])
    expect((await refusal(send(api, 'chat', shown(dataUrl(big))))).message).to.match(/over 8 MiB, the most a picture may have/)
    const text = await refusal(send(api, 'chat', shown(dataUrl(Buffer.from('plain words, no picture')))))
    expect(text.message).to.match(/is not a picture this service reads: its bytes are not a PNG, JPEG, WebP or GIF file/)
    expect(text.param).to.equal('messages[0].content[1].image_url.url')
    const parts = Array.from({length: IMAGE_INPUT_LIMITS.imagesPerRequest + 1}, () => ({image_url: {url: dataUrl(PNG)}, type: 'image_url'}))
    const many = await refusal(send(api, 'chat', {messages: [{content: parts, role: 'user'}]}))
    expect(many.param).to.equal(`messages[0].content[${IMAGE_INPUT_LIMITS.imagesPerRequest}].image_url.url`)
    const lying = await refusal(send(api, 'anthropic', {messages: [{content: [{source: {data: PNG.toString('base64'), media_type: 'image/jpeg', type: 'base64'}, type: 'image'}], role: 'user'}]}))
    expect(lying.message).to.match(/says image\/jpeg, but its bytes are image\/png/)
    expect((await refusal(send(api, 'chat', shown('data:image/png,notbase64')))).message).to.match(/not base64/)
    expect((await refusal(send(api, 'chat', shown('file:///etc/passwd')))).message).to.match(/must be an http\(s\) URL or a data URL/)
  })

  it('never fetches from this machine or a private network unless the operator lists the host, also after a redirect', async () => {
    const loopback = await refusal(send(api, 'chat', shown(`http://127.0.0.1:${port}/red.png`)))
    expect(loopback.message).to.match(/names 127\.0\.0\.1, at 127\.0\.0\.1: an address of this machine or a private network.*SERVICE_ALLOWED_IMAGE_HOSTS/)
    // A name is checked by the addresses it resolves to.
    expect((await refusal(send(api, 'chat', shown(`http://localhost:${port}/red.png`)))).message).to.match(/names localhost, at (127\.0\.0\.1|::1)/)
    const allowed = await send(operatorApi, 'chat', shown(`http://localhost:${port}/red.png`))
    expect(allowed.messages[0].parts[1]).to.deep.equal({image: {data: PNG.toString('base64'), mediaType: 'image/png'}, type: 'image'})
    // The listed host sends the client on to an address that is not listed.
    expect((await refusal(send(operatorApi, 'chat', shown(`http://localhost:${port}/redirect`)))).message).to.match(/names 127\.0\.0\.1/)
    expect((await refusal(send(operatorApi, 'chat', shown(`http://localhost:${port}/missing.png`)))).message).to.match(/answered 404/)
    for (const address of ['10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '::1', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '0.0.0.0', '100.64.0.1', '2002:7f00:1::1', '64:ff9b::7f00:1'])
      expect(isSpecialAddress(address), address).to.equal(true)
    for (const address of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '8.8.8.8']) expect(isSpecialAddress(address), address).to.equal(false)
  })

  it('bounds a fetch: its time, its redirects, a body that does not say its length, and the bytes of all pictures together', async () => {
    const reader = imageReader(['localhost'], {bytesPerImage: 4096, fetchMs: 300, imagesPerRequest: 4, redirects: 2, totalBytes: PNG.length * 2})
    const read = (path: string, count = 1) =>
      refusal(reader.read(Array.from({length: count}, (_, index) => ({field: `messages[0].content[${index}]`, url: `http://localhost:${port}${path}`})), new AbortController().signal))
    expect((await read('/silent.png')).message).to.match(/localhost:\d+ did not send the picture within 0\.3 s; send it as a data URL/)
    expect((await read('/hop/0')).message).to.match(/redirects more than 2 times/)
    expect((await read('/endless.png')).message).to.match(/is over 4096 bytes, the most a picture may have/)
    const together = await read('/red.png', 3)
    expect(together.param).to.equal('messages[0].content[2]')
    expect(together.message).to.match(/brings the request's pictures over \d+ bytes in all/)
  })

  it('reaches an OpenAI-compatible engine (vLLM, SGLang, the transformers host) as image_url parts of data URLs, in place', async () => {
    const upstream = await answeringServer()
    try {
      upstream.answer = (response) => {
        response.writeHead(200, {'content-type': 'text/event-stream'})
        response.end('data: {"choices":[{"delta":{"content":"red"},"index":0,"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
      }
      const image = {data: PNG.toString('base64'), detail: 'low', mediaType: 'image/png'}
      const turn = {content: 'Look:\nWell?', parts: [{text: 'Look:', type: 'text' as const}, {image, type: 'image' as const}, {text: 'Well?', type: 'text' as const}], role: 'user' as const}
      const endpoint = {baseUrl: upstream.baseUrl, modelUid: 'm', port: upstream.port, signal: new AbortController().signal}
      for await (const _ of openAICompatibleOperations().chat({messages: [turn]}, endpoint));
      expect(JSON.parse(upstream.lastBody!).messages[0].content).to.deep.equal([
        {text: 'Look:', type: 'text'},
        {image_url: {detail: 'low', url: dataUrl(PNG)}, type: 'image_url'},
        {text: 'Well?', type: 'text'},
      ])
    } finally {
      upstream.close()
    }
  })
})
