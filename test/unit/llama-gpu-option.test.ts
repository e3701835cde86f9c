/**
 * Which binaries a llama.cpp launch asks node-llama-cpp for: the CPU ones directly where Linux shows no GPU device,
 * so that no launch tests GPU binaries that cannot load; `auto` where a GPU device is there, and off Linux.
 */
import {expect} from 'chai'

import {gpuOption} from '../../plugins/engine-llama-cpp/src/gpu-option.js'

/** A /dev with these names, and /dev/dri with these. */
const machine =
  (devices: string[], dri: string[] = []) =>
  async (path: string) =>
    path === '/dev' ? devices : path === '/dev/dri' ? dri : []

describe('llama.cpp GPU option', () => {
  it('loads the CPU binaries where Linux shows no GPU device, even with a Vulkan loader installed', async () => {
    expect(await gpuOption(undefined, 'linux', machine(['null', 'tty', 'vsock', 'dri'], ['card0']))).to.equal(false)
    expect(await gpuOption(-1, 'linux', machine([]))).to.equal(false)
  })

  it('lets node-llama-cpp choose where an NVIDIA, DRM render or WSL GPU device is there', async () => {
    expect(await gpuOption(undefined, 'linux', machine(['nvidia0', 'nvidiactl']))).to.equal('auto')
    expect(await gpuOption(undefined, 'linux', machine(['dri'], ['card1', 'renderD128']))).to.equal('auto')
    expect(await gpuOption(undefined, 'linux', machine(['dxg']))).to.equal('auto')
    expect(await gpuOption(undefined, 'darwin', machine([]))).to.equal('auto')
  })

  it('loads the CPU binaries when the launch asks for no GPU layers', async () => {
    expect(await gpuOption(0, 'linux', machine(['nvidia0']))).to.equal(false)
  })
})
