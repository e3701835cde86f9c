import {Flags} from '@oclif/core'

import type {SearchReply, SearchResult} from '../protocol/catalogue-search.js'

import {ClientCommand} from '../cli/base-command.js'
import {formatBytes} from '../util/format.js'

/** `fits 1.2 GB`, `too big 40.1 GB`, or why there is no estimate in a few words. */
function memoryCell(result: SearchResult): string {
  const memory = result.memory
  if (!memory) return ''
  if (memory.total_bytes === null) return 'unknown'
  const size = `${formatBytes(memory.total_bytes)} at ${memory.launch}`
  return memory.fits === null ? size : `${memory.fits ? 'fits' : 'too big'}: ${size}`
}

export default class Search extends ClientCommand<typeof Search> {
  static description = `Search for models to launch: the catalogue of every model type, by name, family, description, abilities and size, and with --hub the hub's own search (HF_ENDPOINT on the service's side).

Every word must match. Each result shows its type, the name to launch it by, its sizes and quantizations and, for the first ten from the catalogue, the memory a launch of its smallest offer needs (as cal-model-mem estimates it) and whether that fits the memory free on this machine. A hub result is launched by its hf.co/{user}/{repo} name, with :{quantization} to choose one.`
  static examples = ['<%= config.bin %> search qwen', '<%= config.bin %> search qwen2.5 gguf --hub', '<%= config.bin %> search embedding --json']
  static strict = false
  static flags = {
    hub: Flags.boolean({description: 'Search the hub too.'}),
    limit: Flags.integer({default: 20, description: 'Results at most, from the catalogue and from the hub each (1 to 50).', max: 50, min: 1}),
  }

  async run(): Promise<SearchReply> {
    const {argv, flags} = await this.parse(Search)
    const words = (argv as string[]).join(' ').trim()
    if (!words) this.error('give the words to search for, such as `servicectl search qwen gguf`.', {exit: 2})
    const query = new URLSearchParams({hub: String(flags.hub ?? false), limit: String(flags.limit), q: words})
    const reply = await this.client().request<SearchReply>('GET', `/v1/catalogue/search?${query}`)
    if (reply.hub_error) this.logToStderr(`The hub was not searched: ${reply.hub_error}`)
    if (reply.results.length === 0) this.log(`Nothing matches "${words}"${flags.hub ? '' : '; try --hub to search the hub as well'}.`)
    else
      this.table(
        ['Type', 'Name', 'Sizes', 'Quantizations', 'Memory', 'Source'],
        reply.results.map((result) => [result.model_type, result.model_name, result.sizes, result.quantizations, memoryCell(result), result.source]),
      )
    return reply
  }
}
