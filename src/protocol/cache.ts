// Wire types of the weights cache routes; see launch.ts for why they live in src/protocol/.
import * as s from '../kernel/schema.js'

/** One model version in a worker's weights cache, as `GET /v1/cache/models` lists it. */
const cachedModelFields = {
  commit: s.nullable(s.string()),
  complete: s.boolean({description: 'Whether every file is there.'}),
  downloaded_at: s.nullable(s.string()),
  files: s.array(s.object({name: s.string(), path: s.string(), size: s.number({minimum: 0})}, {title: 'CachedFile'})),
  hub: s.nullable(s.string()),
  model_format: s.string(),
  model_name: s.string(),
  model_size_in_billions: s.string(),
  model_version: s.string(),
  partial_bytes: s.number({description: 'Bytes of unfinished downloads (`.part` files) a launch would resume.', minimum: 0}),
  path: s.string({description: "The entry's folder."}),
  quantization: s.string(),
  repo: s.nullable(s.string()),
  revision: s.nullable(s.string()),
  size_bytes: s.number({description: 'Bytes of complete files.', minimum: 0}),
}

export const cachedModelSchema = s.object(cachedModelFields, {title: 'CachedModel'})

export type CachedModel = s.Infer<typeof cachedModelSchema>

export const cachedModelListSchema = s.object(
  {
    list: s.array(
      s.object(
        {...cachedModelFields, actor_ip_address: s.string({description: "The worker again, by Xinference's name for it."}), worker: s.string({description: 'The worker whose cache holds it.'})},
        {title: 'WorkerCachedModel'},
      ),
    ),
  },
  {title: 'CachedModelList'},
)
