/**
 * The portable build of llama.cpp (plugins/engine-llama-cpp/src/portable-build.ts): its CMake options, that the
 * folder node-llama-cpp builds into from them is the one a launch asks for, and how the CPU variant ggml loaded is
 * named. The build itself (25 minutes) runs in docs/benchmarks.md's measurements and the container image's build.
 */
import {expect} from 'chai'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {describeBinaries} from '../../plugins/engine-llama-cpp/src/auto-build-verdict.js'
import {cmakeOptionsEnvironment, cpuVariantIn, FIND_PORTABLE_BUILD, portableCmakeOptions} from '../../plugins/engine-llama-cpp/src/portable-build.js'
import {ROOT} from '../helpers/service.js'

const NODE_LLAMA_CPP_UTILS = join(ROOT, 'node_modules/node-llama-cpp/dist/bindings/utils')

describe('portable build of llama.cpp', () => {
  it('builds every CPU variant with OpenMP, not for the building CPU, where ggml lists variants', () => {
    const portable = {GGML_BACKEND_DL: 'ON', GGML_CPU_ALL_VARIANTS: 'ON', GGML_NATIVE: 'OFF', GGML_OPENMP: 'ON'}
    expect(portableCmakeOptions('linux', 'x64')).to.deep.equal(portable)
    expect(portableCmakeOptions('win32', 'x64')).to.deep.equal(portable)
    expect(portableCmakeOptions('linux', 'arm64')).to.deep.equal(portable)
    expect(portableCmakeOptions('win32', 'arm64'), 'no variants listed: node-llama-cpp\'s default build').to.deep.equal({})
    expect(portableCmakeOptions('linux', 'ppc64')).to.deep.equal({})
  })

  it('builds into the local build folder a launch looks in, and that folder is not the default build\'s', async () => {
    const {resolveCustomCmakeOptions} = await import(pathToFileURL(join(NODE_LLAMA_CPP_UTILS, 'resolveCustomCmakeOptions.js')).href)
    const {getBuildFolderNameForBuildOptions} = await import(pathToFileURL(join(NODE_LLAMA_CPP_UTILS, 'getBuildFolderNameForBuildOptions.js')).href)
    const folderFor = async (customCmakeOptions: Map<string, string>) =>
      (await getBuildFolderNameForBuildOptions({arch: 'x64', customCmakeOptions, gpu: false, llamaCpp: {release: 'b1', repo: 'ggml-org/llama.cpp'}, platform: 'linux'})).withCustomCmakeOptions
    const saved = {...process.env}
    let built: Map<string, string>
    try {
      Object.assign(process.env, cmakeOptionsEnvironment(portableCmakeOptions()))
      built = resolveCustomCmakeOptions()
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name]
    }

    const looked = resolveCustomCmakeOptions(FIND_PORTABLE_BUILD.cmakeOptions)
    expect(await folderFor(built)).to.equal(await folderFor(looked))
    expect(await folderFor(looked)).to.not.equal(await folderFor(new Map()))
  })

  it('names the CPU variant from the memory map, and none where no variant library is mapped', () => {
    const map = [
      '7f1c2a000000-7f1c2a100000 r-xp 00000000 08:01 123 /opt/node_modules/node-llama-cpp/llama/localBuilds/linux-x64-abc/Release/libggml-base.so',
      '7f1c2b000000-7f1c2b200000 r-xp 00000000 08:01 124 /opt/node_modules/node-llama-cpp/llama/localBuilds/linux-x64-abc/Release/libggml-cpu-haswell.so',
    ].join('\n')
    expect(cpuVariantIn(map)).to.equal('haswell')
    expect(cpuVariantIn('7f1c2a000000-7f1c2a100000 r-xp 00000000 08:01 123 /usr/lib/libggml-cpu.so')).to.equal(undefined)
    expect(cpuVariantIn('')).to.equal(undefined)
  })

  it('says which binaries and which CPU variant a launch loaded', () => {
    expect(describeBinaries('localBuild', false, 'zen4')).to.equal('the local build of llama.cpp (CPU; CPU variant: zen4)')
    expect(describeBinaries('prebuilt', 'cuda', 'haswell')).to.equal("node-llama-cpp's prebuilt llama.cpp binaries (GPU: cuda; CPU variant: haswell)")
    expect(describeBinaries('prebuilt', false)).to.equal("node-llama-cpp's prebuilt llama.cpp binaries (CPU)")
  })
})
