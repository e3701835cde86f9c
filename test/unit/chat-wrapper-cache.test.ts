/**
 * The llama.cpp engine keeps node-llama-cpp's answer to which chat wrapper a GGUF's template is (chat-wrapper-cache.ts),
 * on real GGUFs: a ChatML template is node-llama-cpp's ChatML wrapper, kept by name and made from it by the next load;
 * a template no specialized wrapper matches is the template itself, kept as such. What the kept answer makes renders
 * a chat exactly as node-llama-cpp's own resolving does, and a changed file is resolved again.
 */
import {expect} from 'chai'
import {readdir, readFile, utimes} from 'node:fs/promises'
import {join} from 'node:path'
import {type ChatWrapper, getLlama, type Llama, LlamaLogLevel, type LlamaModel, resolveChatWrapper} from 'node-llama-cpp'

import {chatWrapperResolver} from '../../plugins/engine-llama-cpp/src/chat-wrapper-cache.js'
import {writeRandomLlamaGguf} from '../../plugins/engine-llama-cpp/src/gguf/random-llama.js'
import {temporaryDirectory, until} from '../helpers/service.js'

/** No specialized wrapper renders this. */
const OWN_TEMPLATE = "{% for message in messages %}<<{{ message['role'] }}>> {{ message['content'] }}\n{% endfor %}{% if add_generation_prompt %}<<assistant>> {% endif %}"
const NOT_THINKING = {jinjaTemplate: {additionalRenderParameters: {enable_thinking: false}}}
const CHAT = [
  {text: 'Be brief.', type: 'system' as const},
  {text: 'Hi there', type: 'user' as const},
  {response: ['Hello'], type: 'model' as const},
  {text: 'And again?', type: 'user' as const},
]

const rendered = (wrapper: ChatWrapper) => wrapper.generateContextState({chatHistory: CHAT}).contextText.toString()

describe('chat wrappers kept across loads (llama.cpp engine)', function () {
  this.timeout(60_000)
  let llama: Llama
  let folder: string
  const models: LlamaModel[] = []

  before(async () => {
    llama = await getLlama({build: 'never', gpu: false, logLevel: LlamaLogLevel.error})
    folder = await temporaryDirectory('chat-wrappers-')
  })

  after(async () => {
    for (const model of models) await model.dispose()
  })

  async function load(name: string, chatTemplate?: string) {
    const path = join(folder, `${name}.gguf`)
    await writeRandomLlamaGguf(path, chatTemplate === undefined ? {} : {chatTemplate})
    const model = await llama.loadModel({modelPath: path})
    models.push(model)
    return {model, path}
  }

  /** What the cache holds once it holds `count` answers (they are written after the wrapper is answered). */
  const kept = async (cache: string, count: number) =>
    until(async () => {
      const names = (await readdir(join(cache, 'chat-wrappers')).catch(() => [] as string[])).filter((name) => name.endsWith('.json'))
      return names.length >= count ? Promise.all(names.map(async (name) => JSON.parse(await readFile(join(cache, 'chat-wrappers', name), 'utf8')))) : undefined
    }, `${count} answers kept in ${cache}`)

  it('keeps a ChatML template as the ChatML wrapper, with and without thinking, and the next load makes the same wrapper from it', async () => {
    const {model, path} = await load('chatml')
    const cache = join(folder, 'cache-chatml')
    const first = await chatWrapperResolver(model, path, cache, [undefined, NOT_THINKING])
    const resolved = [first(undefined), first(NOT_THINKING)]
    expect(await kept(cache, 2)).to.deep.equal([{type: 'chatML'}, {type: 'chatML'}])
    const again = await chatWrapperResolver(model, path, cache, [undefined, NOT_THINKING])
    const made = [again(undefined), again(NOT_THINKING)]
    expect(made.map((wrapper) => wrapper.constructor)).to.deep.equal(resolved.map((wrapper) => wrapper.constructor))
    expect(made.map(rendered)).to.deep.equal([rendered(resolveChatWrapper(model)), rendered(resolveChatWrapper(model, {customWrapperSettings: NOT_THINKING}))])
  })

  it('keeps a template no specialized wrapper matches as the template, and resolves a changed file again', async () => {
    const {model, path} = await load('own', OWN_TEMPLATE)
    const cache = join(folder, 'cache-own')
    const first = (await chatWrapperResolver(model, path, cache, [undefined]))(undefined)
    expect(await kept(cache, 1)).to.deep.equal([{type: 'jinjaTemplate'}])
    expect(first.constructor.name).to.equal('JinjaTemplateChatWrapper')
    const made = (await chatWrapperResolver(model, path, cache, [undefined]))(undefined)
    expect(rendered(made)).to.equal(rendered(first)).and.to.contain('<<user>> And again?')
    await utimes(path, new Date(), new Date(Date.now() + 5000))
    ;(await chatWrapperResolver(model, path, cache, [undefined]))(undefined)
    expect(await kept(cache, 2)).to.have.length(2)
  })
})
