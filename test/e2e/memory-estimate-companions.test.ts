/**
 * `servicectl cal-model-mem` for a GGUF image model (stable-diffusion.cpp) on a real `service-local` with a local hub:
 * the weights are the GGUF file's size with the companion files its launch would download (VAE, text encoder), sized
 * from the hub's metadata; nothing is downloaded. The estimator reads no header, so the files' bytes need not be a model.
 */
import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {FakeHub} from '../helpers/fake-hub.js'
import {callApi, type RunningService, servicectl, startService, temporaryDirectory} from '../helpers/service.js'

describe('memory estimate of a GGUF image model with companion files (service-local, servicectl, local hub)', () => {
  let service: RunningService
  let hub: FakeHub

  before(async () => {
    const directory = await temporaryDirectory()
    const file = async (name: string, bytes: number) => {
      await writeFile(join(directory, name), Buffer.alloc(bytes, 1))
      return join(directory, name)
    }

    hub = await FakeHub.start()
    await hub.addRepo('test-org/flux-gguf', {'flux-Q4_0.gguf': await file('flux', 4000)})
    await hub.addRepo('test-org/flux', {'ae.safetensors': await file('ae', 300)})
    await hub.addRepo('test-org/encoders', {'clip_l.safetensors': await file('clip', 20)})
    service = await startService({env: {HF_ENDPOINT: hub.url}})
    const companions = [
      {file_name: 'ae.safetensors', model_id: 'test-org/flux', role: 'vae'},
      {file_name: 'clip_l.safetensors', model_id: 'test-org/encoders', role: 'clip_l'},
    ]
    const family = {
      model_ability: ['text2image'],
      model_family: 'stable_diffusion',
      model_name: 'hub-flux',
      model_src: {huggingface: {gguf_companion_files: companions, gguf_model_file_name_template: 'flux-{quantization}.gguf', gguf_model_id: 'test-org/flux-gguf', gguf_quantizations: ['Q4_0']}},
    }
    expect((await callApi(service, 'POST', '/v1/model_registrations/image', {model: family, persist: false})).status).to.equal(200)
  })

  after(async () => {
    await service?.stop()
    await hub?.stop()
  })

  it('counts the companions in the weights and lists each with its size, downloading nothing', async () => {
    const result = await servicectl(['cal-model-mem', '-n', 'hub-flux', '-f', 'ggufv2', '-q', 'Q4_0'], {env: {SERVICE_ENDPOINT: service.url}})
    expect(result.exitCode, result.stderr).to.equal(0)
    expect(result.stdout).to.contain('(sizes read from huggingface)')
    expect(result.stdout).to.contain('Weights:        4.3 kB (4320 bytes), with 2 companion files\n')
    expect(result.stdout).to.contain('  vae: test-org/flux/ae.safetensors, 300 B (300 bytes), size from huggingface\n')
    expect(result.stdout).to.contain('  clip_l: test-org/encoders/clip_l.safetensors, 20 B (20 bytes), size from huggingface\n')
    expect(result.stdout).to.contain('Total:          4.3 kB (4320 bytes)\n')
    expect(result.stdout).to.contain("Not counted:    stable-diffusion.cpp's compute buffers")
    expect(hub.fileRequests(), 'nothing downloaded').to.deep.equal([])
  })
})
