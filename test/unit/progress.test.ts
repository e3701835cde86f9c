import {expect} from 'chai'

import type {LaunchProgress} from '../../src/protocol/launch.js'

import {createProgressView} from '../../src/cli/progress.js'

const MB = 1_000_000
const step = (stage: LaunchProgress['stage'], downloaded: number, progress: number): LaunchProgress => ({
  downloaded_bytes: downloaded,
  error: null,
  files: [{downloaded_bytes: downloaded, name: 'model-q4_0.gguf', total_bytes: 100 * MB}],
  hub: 'huggingface',
  model_uid: 'm',
  progress,
  repo: 'org/model-GGUF',
  stage,
  total_bytes: downloaded === 0 && stage !== 'downloading' ? 0 : 100 * MB,
})

function render(tty: boolean, steps: Array<[number, LaunchProgress]>): string {
  let out = ''
  let clock = 0
  const view = createProgressView({columns: 100, now: () => clock, tty, write: (text) => (out += text)})
  for (const [at, progress] of steps) {
    clock = at
    view.update(progress)
  }

  view.finish()
  return out
}

describe('launch progress view', () => {
  const download: Array<[number, LaunchProgress]> = [
    [0, step('pending', 0, 0)],
    [1000, step('downloading', 5 * MB, 0.045)],
    [2000, step('downloading', 25 * MB, 0.225)],
    [3000, step('downloading', 45 * MB, 0.405)],
    [6000, step('loading', 100 * MB, 0.9)],
    [7000, step('ready', 100 * MB, 1)],
  ]

  it('writes plain lines for a log: the start, every tenth, and the end of a download', () => {
    expect(render(false, download)).to.equal(
      'Downloading model-q4_0.gguf (100.0 MB) from huggingface org/model-GGUF.\n' +
        '  20% (25.0 MB, 20.0 MB/s)\n' +
        '  40% (45.0 MB, 20.0 MB/s)\n' +
        'Downloaded 100.0 MB in 0:05.\n',
    )
  })

  it('says nothing for a model that needed no download', () => {
    expect(render(false, [[0, step('pending', 0, 0)], [10, step('loading', 0, 0.5)], [20, step('ready', 0, 1)]])).to.equal('')
  })

  it('shows weights being made here on a terminal, and nothing in a log', () => {
    const generated: Array<[number, LaunchProgress]> = [[0, step('pending', 0, 0)], [10, step('generating', 0, 0)], [20, step('loading', 0, 0.5)]]
    expect(render(true, generated).split('\r\u001B[2K').filter(Boolean)[0]).to.equal('Generating  [..............................]   0%')
    expect(render(false, generated)).to.equal('')
  })

  it('redraws one line on a terminal with bytes, speed and time left', () => {
    const lines = render(true, download).split('\r\u001B[2K').filter(Boolean)
    expect(lines[1]).to.equal('Downloading [########......................]  25%  25.0 MB / 100.0 MB  20.0 MB/s  ETA 0:04')
    expect(lines.at(-1)).to.equal('Ready       [##############################] 100%\n')
  })

  it("shows the engine's Python environment being made: a bar on a terminal, one line elsewhere", () => {
    const installing: Array<[number, LaunchProgress]> = [
      [0, step('pending', 0, 0)],
      [1000, step('installing', 0, 0)],
      [2000, step('installing', 0, 0)],
      [3000, step('loading', 0, 0.5)],
      [4000, step('ready', 0, 1)],
    ]
    expect(render(true, installing)).to.contain('Installing  [')
    expect(render(false, installing)).to.equal("Creating the engine's Python environment; later launches that need the same packages reuse it.\n")
  })
})
