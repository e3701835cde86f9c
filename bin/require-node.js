// Shared by the launchers: a clear message instead of a syntax error on an old Node, and user plugins kept
// under SERVICE_HOME so each service home (and each test) has its own set.
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
