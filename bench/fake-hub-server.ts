/**
 * The local hub as a process of its own, so that a benchmark's clients do not share a thread with it:
 * serves the file given as `repo/path=local-file` arguments and prints `{"url", "repos": {id: commit}}`.
 *
 *     node --import tsx bench/fake-hub-server.ts bench/model-GGUF/model-f32.gguf=/tmp/model.gguf
 */
import {FakeHub} from '../test/helpers/fake-hub.js'

const hub = await FakeHub.start()
const repos: Record<string, Record<string, string>> = {}
for (const argument of process.argv.slice(2)) {
  const [target, source] = argument.split('=')
  const [owner, name, ...path] = target.split('/')
  repos[`${owner}/${name}`] = {...repos[`${owner}/${name}`], [path.join('/')]: source}
}

const commits: Record<string, string> = {}
for (const [id, files] of Object.entries(repos)) commits[id] = (await hub.addRepo(id, files)).commit
console.log(JSON.stringify({repos: commits, url: hub.url}))
process.once('SIGTERM', () => void hub.stop().then(() => process.exit(0)))
