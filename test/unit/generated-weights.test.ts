/**
 * Weights made on this machine: the weight store fills the cache from the llama.cpp engine's real generator for specs
 * whose hub is `generated`, and never downloads for them.
 */
import {expect} from 'chai'
import {existsSync} from 'node:fs'
import {readdir, readFile, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import type {WeightsGenerator} from '../../src/kernel/contracts.js'

import {WeightStore} from '../../src/weights/store.js'
import {flattenFamily, type ResolvedSpec} from '../../src/kernel/catalogue.js'
import {generateRecipe, RECIPE_NAMES} from '../../plugins/engine-llama-cpp/src/gguf/recipes.js'
import {temporaryDirectory} from '../helpers/service.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}

const generated = (recipe: string, template = `${recipe}-{quantization}.gguf`): ResolvedSpec =>
  flattenFamily({
    model_name: recipe,
    model_specs: [{model_format: 'ggufv2', model_src: {generated: {model_file_name_template: template, model_id: recipe, quantizations: ['f32']}}}],
  })[0]

/** The engine's generator, counting its runs. */
function countingGenerator(): WeightsGenerator & {runs: number} {
  const generator = {
    format: 'ggufv2',
    async generate(request: Parameters<WeightsGenerator['generate']>[0]) {
      generator.runs++
      await generateRecipe(request)
    },
    recipes: RECIPE_NAMES,
    runs: 0,
  }
  return generator
}

describe('generated weights', () => {
  let directory: string

  beforeEach(async () => {
    directory = await temporaryDirectory()
  })

  const store = (generator: WeightsGenerator | undefined) =>
    new WeightStore({
      cacheDir: join(directory, 'cache'),
      // A hub that cannot be reached: a generated spec must never need one.
      env: {HF_ENDPOINT: 'http://127.0.0.1:1', MODELSCOPE_ENDPOINT: 'http://127.0.0.1:1'},
      log: quiet,
      weightsGenerator: (format) => (format === generator?.format ? generator : undefined),
    })

  it('makes the files into the cache once, with a manifest, and says it is generating', async () => {
    const generator = countingGenerator()
    const weights = store(generator)
    const spec = generated('tiny-random-llama')
    const stages: string[] = []
    const path = await weights.resolve({modelName: 'tiny-random-llm', spec}, {onGenerating: () => stages.push('generating')})
    expect(path).to.equal(join(directory, 'cache', 'tiny-random-llm--ggufv2--f32', 'tiny-random-llama-f32.gguf'))
    expect(stages).to.deep.equal(['generating'])
    expect((await readFile(path)).subarray(0, 4).toString('latin1')).to.equal('GGUF')
    const [cached] = await weights.cache.list()
    expect(cached).to.include({complete: true, hub: 'generated', model_version: 'tiny-random-llm--ggufv2--f32', repo: 'tiny-random-llama'})
    expect(cached.files.map((file) => file.name)).to.deep.equal(['tiny-random-llama-f32.gguf'])
    expect(cached.size_bytes).to.be.within(100_000, 4_000_000)

    const made = (await stat(path)).mtimeMs
    expect(await weights.resolve({modelName: 'tiny-random-llm', spec}, {onGenerating: () => stages.push('again')})).to.equal(path)
    expect(stages).to.deep.equal(['generating'])
    expect(generator.runs).to.equal(1)
    expect((await stat(path)).mtimeMs).to.equal(made)
  })

  it('generates once for launches that arrive together', async () => {
    const generator = countingGenerator()
    const weights = store(generator)
    const spec = generated('tiny-random-bert-embedding')
    const paths = await Promise.all([1, 2, 3].map(() => weights.resolve({modelName: 'tiny-random-embedding', spec})))
    expect(new Set(paths).size).to.equal(1)
    expect(generator.runs).to.equal(1)
  })

  it('makes the same bytes every time (a fixed seed)', async () => {
    for (const recipe of RECIPE_NAMES) {
      const files = [join(directory, `${recipe}-1.gguf`), join(directory, `${recipe}-2.gguf`)]
      for (const file of files) await generateRecipe({files: [file], recipe, signal: new AbortController().signal})
      expect((await readFile(files[0])).equals(await readFile(files[1])), recipe).to.equal(true)
    }
  })

  it('answers where a generated model is for a memory estimate, making it first', async () => {
    const location = await store(countingGenerator()).locate({modelName: 'tiny-random-rerank', spec: generated('tiny-random-bert-reranker')})
    expect(location.source).to.equal('generated')
    expect(existsSync(location.files[0])).to.equal(true)
  })

  it('leaves nothing behind when the generator fails half-way', async () => {
    const failing: WeightsGenerator = {
      format: 'ggufv2',
      async generate({files}) {
        await writeFile(files[0], 'GGUF half a model')
        throw new Error('out of disk')
      },
      recipes: ['broken'],
    }
    const error = await store(failing)
      .resolve({modelName: 'broken', spec: generated('broken')})
      .catch((e) => e)
    expect(error.message).to.equal('out of disk')
    const cache = join(directory, 'cache')
    expect(existsSync(cache) ? await readdir(cache) : []).to.deep.equal([])
  })

  it('names what is missing when no plugin makes the format, or the recipe is unknown', async () => {
    const none = await store(undefined)
      .resolve({modelName: 'tiny-random-llm', spec: generated('tiny-random-llama')})
      .catch((e) => e)
    expect(none).to.include({param: 'model_name', status: 400})
    expect(none.message).to.equal('the weights of tiny-random-llm are made on this machine, but no installed plugin makes ggufv2 files; install the engine plugin that runs ggufv2 models.')
    const unknown = await store(countingGenerator())
      .resolve({modelName: 'odd', spec: generated('no-such-recipe')})
      .catch((e) => e)
    expect(unknown).to.include({status: 400})
    expect(unknown.message).to.equal(`the weights of odd are made on this machine from the recipe "no-such-recipe" (model_id), which the ggufv2 generator does not know; it makes: ${RECIPE_NAMES.join(', ')}.`)
  })

  it('gives a generator that runs Python the environment of its packages, made through the launch', async () => {
    const asked: string[][] = []
    const pythonGenerator: WeightsGenerator = {
      format: 'ggufv2',
      async generate({files, python}) {
        await writeFile(files[0], `made with ${python?.executable}`)
      },
      python: {packages: ['transformers']},
      recipes: ['py-recipe'],
    }
    const environment = {binDir: '/envs/e/bin', envDir: '/envs/e', executable: '/envs/e/bin/python'}
    const path = await store(pythonGenerator).resolve(
      {modelName: 'py', spec: generated('py-recipe')},
      {python: async ({packages}) => (asked.push(packages), environment)},
    )
    expect(asked).to.deep.equal([['transformers']])
    expect(await readFile(path, 'utf8')).to.equal('made with /envs/e/bin/python')
    const refused = await store(pythonGenerator)
      .resolve({modelName: 'py2', spec: generated('py-recipe')})
      .catch((e) => e)
    expect(refused).to.include({param: 'model_name', status: 400})
    expect(refused.message).to.contain('are made with Python, and this worker cannot make Python environments')
  })
})
