import {expect} from 'chai'

import type {Contribution} from '../../src/kernel/contracts.js'

import {createKernelApi, Kernel} from '../../src/kernel/kernel.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const api = createKernelApi('0.0.0', quiet)
const handler = async () => ({body: null, kind: 'json' as const})

describe('kernel', () => {
  it('registers contributions whatever order plugins finished in, model types first', () => {
    const engine: Contribution = {engines: [{formats: ['ggufv2'], hostModule: '/x.js', modelTypes: ['LLM'], name: 'llama.cpp', parameters: {}}]}
    const type: Contribution = {
      catalogue: [{families: [{model_name: 'm', model_specs: [{model_format: 'ggufv2', model_size_in_billions: 1}]}], modelType: 'LLM'}],
      modelTypes: [{defaultAbilities: ['chat'], description: 'LLM', name: 'LLM'}],
      routes: [{handler, method: 'POST', path: '/v1/chat/completions', permission: 'models:read', summary: 'chat'}],
    }
    const kernel = Kernel.fromContributions(api, [
      {contribution: engine, plugin: 'a-engine'},
      {contribution: type, plugin: 'b-model'},
    ])
    expect(kernel.problems).to.deep.equal([])
    expect(kernel.engine('LLAMA.CPP')?.plugin).to.equal('a-engine')
    expect(kernel.enginesFor('LLM').map((e) => e.name)).to.deep.equal(['llama.cpp'])
    expect(kernel.builtins.get('LLM')?.has('m')).to.equal(true)
    expect(kernel.modelType('llm')?.definition.name).to.equal('LLM')
  })

  it('skips bad items and reports each one by plugin, keeping the good ones', () => {
    const kernel = Kernel.fromContributions(api, [
      {contribution: {modelTypes: [{defaultAbilities: [], description: 'LLM', name: 'LLM'}]}, plugin: 'core'},
      {
        contribution: {
          catalogue: [{families: [{model_name: 'no specs'} as never], modelType: 'LLM'}, {families: [], modelType: 'video'}],
          engines: [
            {formats: ['x'], hostModule: '/x.js', modelTypes: ['audio'], name: 'whisper', parameters: {}},
            {formats: ['x'], hostModule: '/y.js', modelTypes: ['LLM', 'rerank'], name: 'partial', parameters: {}},
            {formats: ['x'], hostModule: '/z.js', modelTypes: ['LLM'], name: 'leaky', parameters: {}, processEnvironment: {THREADS: 2} as never},
          ],
          routes: [{handler, method: 'PATCH' as never, path: '/v1/x', summary: ''}, {handler, method: 'GET', path: '/v1/ok', permission: 'public', summary: 'ok'}],
        },
        plugin: 'messy',
      },
      {contribution: {modelTypes: [{defaultAbilities: [], description: 'again', name: 'llm'}]}, plugin: 'twin'},
    ])
    expect(kernel.routes.map((r) => r.definition.path)).to.deep.equal(['/v1/ok'])
    expect(kernel.problems.map((p) => p.plugin)).to.deep.equal(['twin', 'messy', 'messy', 'messy', 'messy', 'messy', 'messy'])
    expect(kernel.problems.map((p) => p.message).join('\n')).to.match(
      /already provided by core[\s\S]*unknown model types: audio[\s\S]*unknown model types: rerank; it runs only LLM[\s\S]*leaky: processEnvironment must map[\s\S]*model_name must be[\s\S]*unknown model type "video"[\s\S]*route PATCH \/v1\/x/,
    )
    expect(kernel.enginesFor('LLM').map((e) => e.name)).to.deep.equal(['partial'])
  })

  it('keeps an engine whose build is malformed, without the build, and reports it by plugin', () => {
    const engine = {formats: ['ggufv2'], hostModule: '/x.js', modelTypes: ['LLM'], parameters: {}}
    const build = {command: ['/usr/bin/node', 'build.js'], description: 'Compiles it.', requires: [{aptPackage: 'cmake', name: 'cmake', programs: ['cmake']}]}
    const kernel = Kernel.fromContributions(api, [
      {contribution: {modelTypes: [{defaultAbilities: [], description: 'LLM', name: 'LLM'}]}, plugin: 'core'},
      {
        contribution: {
          engines: [
            {...engine, build, name: 'good'},
            {...engine, build: {command: [], description: 'Nothing to run.'}, name: 'empty-command'},
            {...engine, build: {...build, requires: [{name: 'cmake', programs: ['/usr/bin/cmake']}]}, name: 'path-not-name'},
            {...engine, build: {...build, reportCommand: 'node report.js' as never}, name: 'report-string'},
          ],
        },
        plugin: 'builder',
      },
    ])
    expect(kernel.engine('good')?.definition.build).to.deep.equal(build)
    expect([...kernel.engines.keys()]).to.deep.equal(['good', 'empty-command', 'path-not-name', 'report-string'])
    for (const name of ['empty-command', 'path-not-name', 'report-string']) expect(kernel.engine(name)?.definition).to.not.have.property('build')
    expect(kernel.problems).to.deep.equal([
      {message: 'engine empty-command: its build is ignored: build.command must be a non-empty list of strings: the program, then its arguments', plugin: 'builder'},
      {
        message: 'engine path-not-name: its build is ignored: build.requires[0] needs a name and a non-empty list of programs (names looked up on PATH, without a directory), and optionally an aptPackage',
        plugin: 'builder',
      },
      {message: 'engine report-string: its build is ignored: build.reportCommand must be a non-empty list of strings: the program, then its arguments', plugin: 'builder'},
    ])
  })

  it('keeps a route that declares no permission, or an unknown one, as admin-only and says so', () => {
    const kernel = Kernel.fromContributions(api, [
      {
        contribution: {
          routes: [
            {handler, method: 'GET', path: '/v1/forgot', summary: 'no permission'},
            {handler, method: 'POST', path: '/v1/typo', permission: 'models:write', summary: 'unknown permission'},
          ],
        },
        plugin: 'careless',
      },
    ])
    expect(kernel.routes.map((r) => r.definition.path)).to.deep.equal(['/v1/forgot', '/v1/typo'])
    expect(kernel.problems.map((p) => p.message)).to.deep.equal([
      'route GET /v1/forgot declares no permission, so only admin may call it when access control is on; set `permission` to one of models:list, models:read, models:register, models:unregister, models:start, models:stop, metrics:read, admin, public, authenticated',
      'route POST /v1/typo declares the unknown permission "models:write", so only admin may call it when access control is on; set `permission` to one of models:list, models:read, models:register, models:unregister, models:start, models:stop, metrics:read, admin, public, authenticated',
    ])
  })

  it('registers weights generators by format and recipe, reporting a malformed one or a recipe already provided, by plugin', () => {
    const generate = async () => {}
    const kernel = Kernel.fromContributions(api, [
      {contribution: {weightsGenerators: [{format: 'ggufv2', generate, recipes: ['tiny']}]}, plugin: 'engine'},
      {
        contribution: {
          weightsGenerators: [
            {format: 'GGUFv2', generate, recipes: ['other']},
            {format: 'ggufv2', generate, recipes: ['tiny', 'more']},
            {format: 'pytorch', recipes: ['x']} as never,
          ],
        },
        plugin: 'rival',
      },
    ])
    expect(kernel.weightsGenerator('GGUFV2', 'tiny')?.recipes).to.deep.equal(['tiny'])
    expect(kernel.weightsGenerator('ggufv2', 'other')?.recipes).to.deep.equal(['other'])
    expect(kernel.weightsGenerator('ggufv2', 'unknown')?.recipes, 'the first, whose refusal names its recipes').to.deep.equal(['tiny'])
    expect(kernel.weightsGenerator('pytorch', 'x')).to.equal(undefined)
    expect(kernel.problems).to.deep.equal([
      {message: 'weights generator for ggufv2: its recipes are already provided by engine', plugin: 'rival'},
      {message: 'weights generator "pytorch" needs a format, a list of recipe names and a generate function', plugin: 'rival'},
    ])
  })
})
