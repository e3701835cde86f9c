/**
 * A launch parameter naming a file on the service's machine, confined by SERVICE_ALLOWED_MODEL_DIRS on a real
 * `service-local`: stable-diffusion.cpp's `vae` outside the allowed folder, directly or through a symlink inside it,
 * is a 400 naming the parameter and the setting before the program starts, and the service keeps serving. (The
 * engines' checks with the setting on and off, file by file: test/unit/local-path-parameters.test.ts.)
 */
import {expect} from 'chai'
import {symlink, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, type RunningService, startService, temporaryDirectory} from '../helpers/service.js'

describe('launch parameters naming files, under SERVICE_ALLOWED_MODEL_DIRS (service-local)', function () {
  let service: RunningService
  let allowed: string
  let elsewhere: string

  before(async function () {
    // The engine's environment is the stable-diffusion.cpp tests' (cached); a cold run builds it.
    this.timeout(45 * 60_000)
    allowed = await temporaryDirectory()
    elsewhere = await temporaryDirectory()
    await writeFile(join(elsewhere, 'ae.safetensors'), 'not for this service')
    await symlink(join(elsewhere, 'ae.safetensors'), join(allowed, 'ae.safetensors'))
    const uv = await uvFromPyPI()
    service = await startService({env: {PATH: `${uv}:${process.env.PATH}`, SERVICE_ALLOWED_MODEL_DIRS: allowed, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}})
  })

  after(async () => service?.stop())

  it("refuses stable-diffusion.cpp's vae outside the allowed folders, named or linked, and keeps serving", async function () {
    this.timeout(45 * 60_000)
    for (const vae of [join(elsewhere, 'ae.safetensors'), join(allowed, 'ae.safetensors')]) {
      const launched = await callApi(service, 'POST', '/v1/models', {model_engine: 'stable-diffusion.cpp', model_name: 'tiny-random-flux', model_type: 'image', vae})
      expect(launched.status, JSON.stringify(launched.body)).to.equal(400)
      expect(launched.body.error.param).to.equal('vae')
      expect(launched.body.error.message).to.contain(`vae (${vae}) is outside the folders SERVICE_ALLOWED_MODEL_DIRS allows (${allowed})`)
    }

    const models = await callApi(service, 'GET', '/v1/models')
    expect(models.status).to.equal(200)
    expect(models.body.data).to.deep.equal([])
  })
})
