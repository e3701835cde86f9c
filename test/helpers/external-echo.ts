/** A service-local with the engine-external-echo fixture linked and a model of it registered, for the external engine's tests. */
import {expect} from 'chai'
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {callApi, ROOT, type RunningService, servicectl, startService, temporaryDirectory} from './service.js'

const FIXTURE = join(ROOT, 'test/fixtures/plugins/engine-external-echo')

/** Starts the service with `args` and `env`, with the engine linked and `external-echo-test` registered. */
export async function echoService(args: string[], env: Record<string, string> = {}): Promise<RunningService> {
  const home = await temporaryDirectory('service-program-')
  const linked = await servicectl(['plugins', 'link', FIXTURE, '--no-install'], {env: {SERVICE_HOME: home}})
  expect(linked.exitCode, linked.stderr).to.equal(0)
  const service = await startService({args, env, home})
  const weights = join(home, 'echo-weights.txt')
  await writeFile(weights, 'stand-in weights\n')
  const family = {model_ability: ['chat'], model_name: 'external-echo-test', model_specs: [{model_format: 'echo', model_size_in_billions: 0, model_uri: pathToFileURL(weights).href, quantization: 'none'}]}
  expect((await callApi(service, 'POST', '/v1/model_registrations/LLM', {model: family, persist: false})).status).to.equal(200)
  return service
}

/** Launches an echo model as `uid`: its program's pid, and its log's lines. */
export async function launchEcho(service: RunningService, uid: string): Promise<{pid: number; log: () => Promise<string[]>}> {
  const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'external-echo', model_name: 'external-echo-test', model_uid: uid})
  expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
  const {pid} = (await callApi(service, 'GET', `/v1/models/${uid}`)).body
  const log = async () => (await readFile(join(service.home, 'logs', 'models', `${uid}.log`), 'utf8').catch(() => '')).split('\n').filter(Boolean)
  return {log, pid}
}
