// Wire types of `GET /v1/usage`: requests and tokens per API key (by its name) and per model; see launch.ts for why they live in src/protocol/.
import * as s from '../kernel/schema.js'

export const USAGE_WINDOWS = ['1h', '24h', '7d', '30d'] as const
export const USAGE_GROUPS = ['key', 'model', 'key,model'] as const

const usageRowSchema = s.object(
  {
    api_key: s.nullable(s.string({description: "The key's name (never the key itself), or its user's logins' (`<username>-login`); null for requests made without access control. Null when grouped by model only."})),
    completion_tokens: s.integer({minimum: 0}),
    model: s.nullable(s.string({description: 'The model uid; null when grouped by key only.'})),
    prompt_tokens: s.integer({minimum: 0}),
    requests: s.integer({description: 'Requests that ran a model, finished or not.', minimum: 0}),
    total_tokens: s.integer({minimum: 0}),
  },
  {title: 'UsageRow'},
)

/** `GET /v1/usage`. */
export const usageReplySchema = s.object(
  {
    data: s.array(usageRowSchema, {description: 'One row per key, model, or key and model (group_by), most tokens first.'}),
    group_by: s.string({enum: USAGE_GROUPS}),
    object: s.literal('usage'),
    since: s.string({description: 'The start of the period (ISO 8601), rounded down to the hour: usage is kept by the hour.'}),
    until: s.string({description: 'Its end (ISO 8601), not included.'}),
  },
  {title: 'UsageReply'},
)
export type UsageReply = s.Infer<typeof usageReplySchema>
export type UsageRow = UsageReply['data'][number]
