import {expect} from 'chai'

import {moveLeadingGlobalFlags} from '../../src/cli/global-flags.js'

describe('global options before the subcommand', () => {
  it('moves them, with their values, after the subcommand and its arguments', () => {
    expect(moveLeadingGlobalFlags(['-p', '9997', 'list'])).to.deep.equal(['list', '-p', '9997'])
    expect(moveLeadingGlobalFlags(['--log-level', 'debug', '-H', 'host', 'list', '--json'])).to.deep.equal(['list', '--json', '--log-level', 'debug', '-H', 'host'])
    expect(moveLeadingGlobalFlags(['-e', 'http://h:1', '-ak', 'sk-1', 'engine', 'build'])).to.deep.equal(['engine', 'build', '-e', 'http://h:1', '-ak', 'sk-1'])
    expect(moveLeadingGlobalFlags(['--port=9997', '-Hhost', 'list'])).to.deep.equal(['list', '--port=9997', '-Hhost'])
  })

  it('keeps them before a `--`, so they stay flags', () => {
    expect(moveLeadingGlobalFlags(['-p', '1', 'chat', '--', '-x'])).to.deep.equal(['chat', '-p', '1', '--', '-x'])
  })

  it('leaves everything else as it was: -v, --help, flags after the subcommand, and flags with no subcommand', () => {
    for (const argv of [['-v'], ['--help', 'list'], ['list', '-p', '1'], ['-p', '1'], ['--json', 'list'], []]) expect(moveLeadingGlobalFlags(argv)).to.deep.equal(argv)
  })
})
