/**
 * A launch while llama.cpp is being built for this machine (the service's background build, `servicectl engine
 * build llama.cpp`, or node-llama-cpp's own `source download`) must not wait for it: node-llama-cpp's getLlama
 * waits, before it even looks at the prebuilt binaries, for a running build of the local binaries it would load to
 * end, which is ten minutes on 2 cores. It sees such a build by its lock beside the build's folder in `localBuilds/`
 * (proper-lockfile's, refreshed every 5 s); while one is held, a launch asks for a local build with an extra CMake
 * option, which node-llama-cpp keeps in a folder of its own that no build locks and that holds nothing, so it loads
 * the prebuilt binaries at once.
 */
import {readdir, stat} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

/** Where node-llama-cpp keeps its source and its local builds (`localBuilds/`): what a build writes into. */
export const NODE_LLAMA_CPP_BUILD_FOLDER = fileURLToPath(new URL('../llama', import.meta.resolve('node-llama-cpp')))

/** node-llama-cpp's locks count as left behind (stale) after 10 s without a refresh; so do they here. */
const STALE_MS = 10_000

/** Whether a build holds one of node-llama-cpp's locks in `localBuilds` now: a lock folder refreshed within STALE_MS. */
export async function buildInProgress(localBuilds = join(NODE_LLAMA_CPP_BUILD_FOLDER, 'localBuilds'), now = Date.now()): Promise<boolean> {
  const locks = (await readdir(localBuilds).catch(() => [])).filter((name) => name.endsWith('.lock'))
  const ages = await Promise.all(locks.map((name) => stat(join(localBuilds, name)).then((lock) => now - lock.mtimeMs, () => Infinity)))
  return ages.some((age) => age < STALE_MS)
}

/** getLlama's options that pass over local builds to the prebuilt binaries (see above). */
export const PASS_OVER_LOCAL_BUILDS = {cmakeOptions: {SERVICE_LLAMA_CPP_BUILD_IN_PROGRESS: '1'}}
