/**
 * A launch during the service's background build of llama.cpp (or `servicectl engine build llama.cpp`) must not
 * wait for it: node-llama-cpp's getLlama waits, before it even looks at the prebuilt binaries, for any build of the
 * local binaries it would load to end (its lock on that build's folder), which is ten minutes on 2 cores. While the
 * service's build lock is held, a launch asks for a local build with an extra CMake option, which node-llama-cpp
 * keeps in a folder of its own that no build locks and that holds nothing, so it loads the prebuilt binaries at once.
 */
import {stat} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

/** Where node-llama-cpp keeps its source and its local builds (`localBuilds/`): what a build writes into. */
export const NODE_LLAMA_CPP_BUILD_FOLDER = fileURLToPath(new URL('../llama', import.meta.resolve('node-llama-cpp')))

/** The lock the service holds in the build's folder while it builds (src/service/build-process.ts, proper-lockfile). */
const BUILD_LOCK = join(NODE_LLAMA_CPP_BUILD_FOLDER, 'service-auto-build.lock')

/** proper-lockfile's holder refreshes the lock folder's time every 5 s; one older than this was left by a killed holder. */
const STALE_MS = 10_000

/** Whether a build holds the lock now, as proper-lockfile's own check decides: the lock folder exists and is fresh. */
export async function buildInProgress(lock = BUILD_LOCK, now = Date.now()): Promise<boolean> {
  try {
    return now - (await stat(lock)).mtimeMs < STALE_MS
  } catch {
    return false
  }
}

/** getLlama's options that pass over local builds to the prebuilt binaries (see above). */
export const PASS_OVER_LOCAL_BUILDS = {cmakeOptions: {SERVICE_LLAMA_CPP_BUILD_IN_PROGRESS: '1'}}
