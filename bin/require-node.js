// Shared by the launchers: a clear message instead of a syntax error on an old Node, and user plugins kept
// under SERVICE_HOME so each service home (and each test) has its own set.
import module from 'node:module'
import {homedir} from 'node:os'
import {join, resolve} from 'node:path'

const [major] = process.versions.node.split('.').map(Number)
if (major < 22) {
  process.stderr.write(`service-toolkit needs Node.js 22 or newer; this is ${process.version}. Run \`. scripts/ensure-node.sh\` from the repository, or install a newer Node.\n`)
  process.exit(1)
}

process.env.SERVICECTL_DATA_DIR ??= join(resolve(process.env.SERVICE_HOME || join(homedir(), '.service')), 'plugins')
// Plain-JavaScript plugins linked with `servicectl plugins link` need no transpiling; oclif would otherwise
// warn about each of them on every start.
process.env.OCLIF_DISABLE_LINKED_ESM_WARNING ??= '1'
// The Node version is checked above; oclif's own check of it loads semver's 47 modules into every command.
process.env.OCLIF_DISABLE_ENGINE_WARNING ??= '1'
// Node keeps compiled code of the modules loaded from here on, so later starts skip compiling them. Through
// the environment, model processes (and the processes node-llama-cpp forks to test its binaries) share it:
// measured on 2 cores, a launch's process start, node-llama-cpp import and binary test went from 670 to 560 ms.
const compileCache = module.enableCompileCache()
if (compileCache.directory) process.env.NODE_COMPILE_CACHE ??= compileCache.directory
