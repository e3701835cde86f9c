import {Flags} from '@oclif/core'
import {expect} from 'chai'

import {splitEngineOptions} from '../../src/cli/extra-options.js'

describe('engine parameters on the command line (splitEngineOptions)', () => {
  const flags = {
    check: Flags.boolean({description: 'A switch of the command.'}),
    'model-engine': Flags.string({description: 'Engine.'}),
    'model-name': Flags.string({char: 'n', description: 'Name.'}),
    quantization: Flags.string({aliases: ['quant'], char: 'q', description: 'Quantization.'}),
  }
  const split = (...argv: string[]) => splitEngineOptions(argv, flags)

  it('takes `--name value` and `--name=value` pairs the command does not declare, leaving its own flags', () => {
    expect(split('-n', 'tiny', '--n_ctx', '2048', '--n_threads=1', '-q', 'f32')).to.deep.equal({
      engineOptions: {n_ctx: '2048', n_threads: '1'},
      rest: ['-n', 'tiny', '-q', 'f32'],
    })
  })

  it('takes a negative number as a value', () => {
    expect(split('--n_gpu_layers', '-1').engineOptions).to.deep.equal({n_gpu_layers: '-1'})
  })

  it('reads a bare switch before another flag as true, never taking the command’s own flag as its value', () => {
    for (const own of [['-q', 'f32'], ['-qf32'], ['-q=f32'], ['--quantization', 'f32'], ['--quant=f32'], ['-en', 'llama.cpp'], ['--model-engine', 'llama.cpp'], ['--check'], ['--json'], ['-h']]) {
      const {engineOptions, rest} = split('-n', 'tiny', '--flash_attn', ...own)
      expect(engineOptions, own.join(' ')).to.deep.equal({flash_attn: 'true'})
      expect(rest, own.join(' ')).to.deep.equal(['-n', 'tiny', ...own])
    }

    expect(split('--flash_attn', '--n_ctx', '512').engineOptions).to.deep.equal({flash_attn: 'true', n_ctx: '512'})
    expect(split('--flash_attn').engineOptions).to.deep.equal({flash_attn: 'true'})
  })
})
