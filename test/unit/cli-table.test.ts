import {expect} from 'chai'

import {formatTable} from '../../src/cli/table.js'

describe('CLI tables', () => {
  it('keeps a long, multi-line cell to one line, at most 60 characters but in the last column, so no column is pushed out', () => {
    const reason = `the model process exited with code 1\n${'x'.repeat(500)}`
    const lines = formatTable(['UID', 'Reason', 'Outcome'], [['m1', reason, 'crashed'], ['m2', 'ok', 'ready']])
    expect(lines).to.have.length(4)
    expect(lines[2]).to.match(/^m1 {3}the model process exited with code 1 x+… {2}crashed$/)
    expect([...lines[2]].length).to.equal(3 + 2 + 60 + 2 + 7)
    expect(lines[1]).to.equal(`---  ${'-'.repeat(60)}  -------`)
  })

  it('gives the last column whole, its rule no longer than 60', () => {
    const details = `model_format=ggufv2 ${'x'.repeat(100)} model_engine=llama.cpp`
    const lines = formatTable(['Kind', 'Details'], [['launch', details]])
    expect(lines[2]).to.equal(`launch  ${details}`)
    expect(lines[1]).to.equal(`------  ${'-'.repeat(60)}`)
  })

  it('pads columns by characters, not UTF-16 units', () => {
    const lines = formatTable(['Name', 'Size'], [['🦙 llama', '1 GB'], ['qwen', '2 GB']])
    expect(lines[2]).to.equal('🦙 llama  1 GB')
    expect(lines[3]).to.equal('qwen     2 GB')
  })
})
