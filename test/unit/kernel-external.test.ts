/** The kernel's checks of the contributions for external programs and uploads: engines with `external`, multipart routes. */
import {expect} from 'chai'

import type {Contribution, EngineDefinition} from '../../src/kernel/contracts.js'

import {createKernelApi, Kernel} from '../../src/kernel/kernel.js'

const quiet = {debug() {}, error() {}, info() {}, warn() {}}
const api = createKernelApi('0.0.0', quiet)
const handler = async () => ({body: null, kind: 'json' as const})
const llm: Contribution = {modelTypes: [{defaultAbilities: ['chat'], description: 'LLM', name: 'LLM'}]}
const external: EngineDefinition['external'] = {
  command: (_request, {port}) => ({args: ['serve', '--port', String(port)], file: 'vllm'}),
  health: {path: '/health', timeoutMs: 600_000},
  operations: api.external.openAICompatible(),
}

describe('kernel: external engines and multipart routes', () => {
  it('registers an engine that runs a program instead of a host module, and reports one that has neither', () => {
    const kernel = Kernel.fromContributions(api, [
      {contribution: llm, plugin: 'core'},
      {
        contribution: {
          engines: [
            {external, formats: ['pytorch'], modelTypes: ['LLM'], name: 'vllm', parameters: {}},
            {formats: ['pytorch'], modelTypes: ['LLM'], name: 'nothing-to-run', parameters: {}},
            {external: {...external, health: undefined as never}, formats: ['pytorch'], modelTypes: ['LLM'], name: 'no-health', parameters: {}},
          ],
        },
        plugin: 'engines',
      },
    ])
    expect(kernel.engine('vllm')?.definition.external?.health.path).to.equal('/health')
    expect(Object.keys(kernel.engine('vllm')!.definition.external!.operations)).to.deep.equal(['chat', 'complete'])
    expect(kernel.problems.map((problem) => problem.message)).to.deep.equal([
      'engine nothing-to-run needs a hostModule path (or an external program) and a list of formats',
      'engine no-health needs a hostModule path (or an external program) and a list of formats',
    ])
  })

  it("keeps an engine's python packages, and reports a declaration the kernel cannot install", () => {
    const kernel = Kernel.fromContributions(api, [
      {contribution: llm, plugin: 'core'},
      {
        contribution: {
          engines: [
            {external, formats: ['pytorch'], modelTypes: ['LLM'], name: 'transformers', parameters: {}, python: {packages: ['transformers', 'torch==2.13.0']}},
            {external, formats: ['pytorch'], modelTypes: ['LLM'], name: 'option-smuggler', parameters: {}, python: {packages: ['--index-url=http://elsewhere']}},
            {formats: ['ggufv2'], hostModule: '/host.js', modelTypes: ['LLM'], name: 'node-python', parameters: {}, python: {packages: ['six']}},
          ],
        },
        plugin: 'engines',
      },
    ])
    expect(kernel.engine('transformers')?.definition.python).to.deep.equal({packages: ['transformers', 'torch==2.13.0']})
    expect(kernel.problems.map((problem) => problem.message)).to.deep.equal([
      'engine option-smuggler: python.packages must be a list of pip requirement strings (none starting with "-")',
      'engine node-python: python packages are installed for external programs only; give the engine an `external` program',
    ])
  })

  it('keeps a multipart route and skips one whose limits or file fields are missing', () => {
    const kernel = Kernel.fromContributions(api, [
      {
        contribution: {
          routes: [
            {handler, method: 'POST', multipart: {files: {file: {required: true}}, maxFileBytes: 25 << 20}, path: '/v1/audio/transcriptions', permission: 'models:read', summary: 'transcribe'},
            {handler, method: 'POST', multipart: {files: {}, maxFileBytes: 1024}, path: '/v1/images/edits', permission: 'models:read', summary: 'no file field'},
            {handler, method: 'POST', multipart: {files: {image: {}}} as never, path: '/v1/images/variations', permission: 'models:read', summary: 'no limit'},
          ],
        },
        plugin: 'uploads',
      },
    ])
    expect(kernel.routes.map((route) => route.definition.path)).to.deep.equal(['/v1/audio/transcriptions'])
    expect(kernel.problems.map((problem) => problem.message)).to.deep.equal([
      'route POST /v1/images/edits: multipart needs maxFileBytes (a number of bytes above 0) and at least one field in files',
      'route POST /v1/images/variations: multipart needs maxFileBytes (a number of bytes above 0) and at least one field in files',
    ])
  })
})
