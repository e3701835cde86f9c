// The wire shape of `GET /v1/catalogue/search` (`servicectl search`); see launch.ts for why wire types live in src/protocol/.
import * as s from '../kernel/schema.js'

/** The most words a search takes, and characters in all: a search is a few words, not a document. */
export const MAX_SEARCH_WORDS = 16
export const MAX_SEARCH_CHARACTERS = 200
export const MAX_SEARCH_RESULTS = 50

const memorySchema = s.object(
  {
    fits: s.nullable(s.boolean({description: 'Whether the estimate is at most the memory free on the worker with the most (its GPUs, or its RAM); null when unknown.'})),
    total_bytes: s.nullable(s.int64({description: 'The memory estimate of the launch below (weights, KV cache at the default context, overhead); null when none could be made.'})),
    launch: s.string({description: 'What was estimated: size, format and quantization, the smallest the model offers.'}),
    note: s.optional(s.string({description: 'Why there is no estimate, when there is none.'})),
  },
  {title: 'SearchMemory'},
)

export const searchResultSchema = s.object(
  {
    source: s.string({description: '`catalogue`, or the hub the model was found on (huggingface).'}),
    model_type: s.string(),
    model_name: s.string({description: 'What to launch it by: `servicectl launch -n <model_name>` (a hub model: hf.co/{user}/{repo}).'}),
    description: s.string(),
    abilities: s.array(s.string()),
    formats: s.array(s.string()),
    sizes: s.array(s.string({description: 'Sizes in billions, as launches name them (0_5, 7).'})),
    quantizations: s.array(s.string()),
    memory: s.optional(memorySchema),
  },
  {title: 'SearchResult'},
)

export const searchReplySchema = s.object(
  {
    query: s.string(),
    results: s.array(searchResultSchema),
    hub_error: s.optional(s.string({description: 'Why the hub could not be searched, when it was asked to be and could not.'})),
  },
  {title: 'SearchReply'},
)

export type SearchResult = s.Infer<typeof searchResultSchema>
export type SearchReply = s.Infer<typeof searchReplySchema>
