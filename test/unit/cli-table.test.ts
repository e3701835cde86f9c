import {expect} from 'chai'

import {formatTable} from '../../src/cli/table.js'

describe('CLI tables', () => {
  it('keeps a long, multi-line cell to one line of at most 60 characters, so its column stays narrow', () => {
    const reason = `the model process exited with code 1\n${'x'.repeat(500)}`
    const lines = formatTable(['UID', 'Reason'], [['m1', reason], ['m2', 'ok']])
    expect(lines).to.have.length(4)
    for (const line of lines) expect([...line].length).to.be.at.most(4 + 2 + 60)
    expect(lines[2]).to.match(/^m1 {3}the model process exited with code 1 x+…$/)
    expect(lines[1]).to.equal(`---  ${'-'.repeat(60)}`)
  })

  it('pads columns by characters, not UTF-16 units', () => {
    const lines = formatTable(['Name', 'Size'], [['🦙 llama', '1 GB'], ['qwen', '2 GB']])
    expect(lines[2]).to.equal('🦙 llama  1 GB')
    expect(lines[3]).to.equal('qwen     2 GB')
  })
})
