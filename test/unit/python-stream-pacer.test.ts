/**
 * service_http.StreamPacer, the pacing an engine program applies to its own streams (host.py with the service's
 * stream interval), run for real in Python with a clock the test sets: which pieces go at once and which are held
 * and joined.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {join} from 'node:path'

import {ROOT} from '../helpers/service.js'

/** Feeds `pieces` (text, and when it comes, in ms) to a pacer of `intervalMs`; what each add answered, then take(). */
async function paced(intervalMs: number, pieces: Array<[string, number]>): Promise<{answers: Array<string | null>; rest: string}> {
  const script = `
import json, sys
from service_http import StreamPacer
now = [0.0]
pacer = StreamPacer(${intervalMs}, clock=lambda: now[0])
answers = []
for text, at in json.loads(sys.argv[1]):
    now[0] = at / 1000
    answers.append(pacer.add(text))
print(json.dumps({"answers": answers, "rest": pacer.take()}))
`
  const {stdout} = await execa('python3', ['-c', script, JSON.stringify(pieces)], {env: {PYTHONPATH: join(ROOT, 'python')}})
  return JSON.parse(stdout)
}

describe('service_http.StreamPacer (an engine program pacing its own streams)', () => {
  it('sends the first piece at once and joins the next ones while the one after is expected within the interval', async () => {
    // A piece a millisecond against 16 ms: the first alone, then one send when the interval since it is nearly over.
    const pieces = Array.from({length: 20}, (_, index) => [`t${index} `, index + 1] as [string, number])
    const {answers, rest} = await paced(16, pieces)
    expect(answers[0]).to.equal('t0 ')
    const sent = answers.filter((answer) => answer !== null)
    expect(sent).to.have.length(2)
    expect(answers.indexOf(sent[1])).to.equal(15)
    expect(sent[1]).to.equal(pieces.slice(1, 16).map(([text]) => text).join(''))
    expect(rest).to.equal(pieces.slice(16).map(([text]) => text).join(''))
  })

  it('sends every piece at once from a model slower than the interval, and with an interval of 0', async () => {
    const slow = await paced(16, [['a', 0], ['b', 20], ['c', 40]])
    expect(slow).to.deep.equal({answers: ['a', 'b', 'c'], rest: ''})
    const unpaced = await paced(0, [['a', 0], ['b', 0.5], ['c', 1]])
    expect(unpaced).to.deep.equal({answers: ['a', 'b', 'c'], rest: ''})
  })
})
