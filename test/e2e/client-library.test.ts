/**
 * The built client entry (`service-toolkit/client`) loaded on its own in a fresh Node process: every module it
 * loads is recorded by a resolve hook, so a server, cluster, oclif or `node:` import anywhere in its import
 * closure shows up, as it would break the client in a browser or without the service's dependencies.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {ROOT} from '../helpers/service.js'

/** Imports the entry after registering a hook that records every module resolved; prints the URLs as JSON. */
const RECORD_IMPORTS = `
import {registerHooks} from 'node:module'
const loaded = []
registerHooks({resolve(specifier, context, next) {
  const resolved = next(specifier, context)
  loaded.push(resolved.url)
  return resolved
}})
const entry = await import(process.argv[1])
console.log(JSON.stringify({exports: Object.keys(entry).sort(), loaded}))
`

describe('client library entry point', () => {
  it('loads only the client, the shared protocol types and the error vocabulary, with no node: module', async () => {
    const {exports, loaded} = JSON.parse((await execa('node', ['--input-type=module', '-e', RECORD_IMPORTS, join(ROOT, 'dist/client/index.js')])).stdout) as {exports: string[]; loaded: string[]}
    const dist = pathToFileURL(join(ROOT, 'dist')).href
    const local = loaded.filter((url) => url.startsWith(dist)).map((url) => url.slice(dist.length + 1))
    const others = loaded.filter((url) => !url.startsWith(dist))
    expect(local.filter((path) => !/^(client|protocol)\/|^kernel\/errors\.js$/.test(path))).to.deep.equal([])
    expect(local).to.include.members(['client/index.js', 'client/client.js', 'client/server-sent-events.js'])
    expect(others.filter((url) => !url.includes('/node_modules/eventsource-parser/'))).to.deep.equal([])
    expect(exports).to.deep.equal(['CLIENT_VERSION', 'Client', 'DEFAULT_ENDPOINT', 'ModelClient', 'ServiceError'])
  })

  it('is the package export service-toolkit/client, and the main export still has the client', async () => {
    const script = `const client = await import('service-toolkit/client'); const main = await import('service-toolkit'); console.log(client.Client === main.Client && typeof main.ServiceError)`
    const {stdout} = await execa('node', ['--input-type=module', '-e', script], {cwd: ROOT})
    expect(stdout).to.equal('function')
  })
})
