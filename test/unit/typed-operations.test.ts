import {expect} from 'chai'
import {fileURLToPath} from 'node:url'
import ts from 'typescript'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const USAGE = fileURLToPath(new URL('../fixtures/typed-operations/usage.ts', import.meta.url))

describe('typed engine operations', () => {
  it("holds routes and engines to their model type's operations at compile time", function () {
    this.timeout(120_000)
    const configFile = ts.readConfigFile(`${ROOT}/tsconfig.base.json`, (path) => ts.sys.readFile(path))
    const {options} = ts.parseJsonConfigFileContent(configFile.config, ts.sys, ROOT)
    const program = ts.createProgram([USAGE], {...options, composite: false, declaration: false, noEmit: true})
    const problems = ts
      .getPreEmitDiagnostics(program)
      .map((diagnostic) => `${diagnostic.file ? `${diagnostic.file.fileName.slice(ROOT.length)}:${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start!).line + 1}: ` : ''}${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`)
    // An unused `@ts-expect-error` is itself an error, so none here means every misuse was refused.
    expect(problems).to.deep.equal([])
  })
})
