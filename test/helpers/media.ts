/**
 * What the image and video tests share: pictures they make, multipart requests, and a service with the
 * engine-image-pattern fixture linked and a model of its own registered on it.
 */
import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'
import {PNG} from 'pngjs'

import {callApi, ROOT, type RunningService, servicectl, startService, temporaryDirectory} from './service.js'

const FIXTURE = join(ROOT, 'test/fixtures/plugins/engine-image-pattern')

/** A PNG of one colour; `rgba` with its alpha, or three channels for an opaque one. */
export function solidPng(width: number, height: number, rgba: number[]): Buffer {
  const png = new PNG({height, width})
  const colour = rgba.length === 3 ? [...rgba, 255] : rgba
  for (let pixel = 0; pixel < width * height; pixel++) png.data.set(colour, pixel * 4)
  return PNG.sync.write(png)
}

/** A multipart/form-data POST of text fields and PNG files, answered as JSON. */
/** A multipart body of text fields and files, each file named `<field>.png`. */
export function formData(fields: Record<string, string>, files: Record<string, Buffer>): FormData {
  const body = new FormData()
  for (const [name, value] of Object.entries(fields)) body.append(name, value)
  for (const [name, bytes] of Object.entries(files)) body.append(name, new Blob([bytes]), `${name}.png`)
  return body
}

export async function postForm(service: {url: string}, path: string, fields: Record<string, string>, files: Record<string, Buffer>): Promise<{status: number; body: any}> {
  const response = await fetch(`${service.url}${path}`, {body: formData(fields, files), method: 'POST'})
  return {body: await response.json(), status: response.status}
}

/**
 * A service in a new home with the fixture linked, and `modelName` registered as a `modelType` model in the fixture's
 * format; the caller launches it.
 */
export async function serviceWithPatternEngine(modelType: string, modelName: string, abilities: string[], env: Record<string, string> = {}): Promise<{home: string; service: RunningService}> {
  const home = await temporaryDirectory(`service-${modelType}-`)
  const linked = await servicectl(['plugins', 'link', FIXTURE, '--no-install'], {env: {SERVICE_HOME: home}})
  expect(linked.exitCode, linked.stderr).to.equal(0)
  const service = await startService({env, home})
  const weights = join(home, 'pattern.txt')
  await writeFile(weights, 'stand-in weights\n')
  const family = {model_ability: abilities, model_family: 'pattern', model_name: modelName, model_specs: [{model_format: 'pattern', model_uri: pathToFileURL(weights).href}]}
  expect((await callApi(service, 'POST', `/v1/model_registrations/${modelType}`, {model: family, persist: false})).status).to.equal(200)
  return {home, service}
}
