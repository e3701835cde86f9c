/**
 * The state of an engine's background build for this machine (`GET /v1/engines/{engine}/build`): one schema gives
 * the route's OpenAPI document and the type the service, the client, `servicectl engine` and the web interface share.
 */
import * as s from '../kernel/schema.js'

/**
 * `off`: turned off (SERVICE_AUTO_BUILD, --no-auto-build); `unavailable`: this machine cannot build (a program is
 * missing); `checking`: asking the engine whether a build would help; `not_needed`: it would not (a local build
 * exists, a GPU build is in use); `building`; `succeeded`; `failed` (not retried until the next start or
 * `servicectl engine build`).
 */
export const ENGINE_BUILD_STATES = ['off', 'unavailable', 'checking', 'not_needed', 'building', 'succeeded', 'failed'] as const
export type EngineBuildState = (typeof ENGINE_BUILD_STATES)[number]

export const engineBuildStatusSchema = s.object(
  {
    engine: s.string(),
    state: s.string({enum: ENGINE_BUILD_STATES}),
    reason: s.optional(s.string({description: 'Why the build is off, unavailable or not needed, in a sentence.'})),
    stage: s.optional(s.string({description: 'While building: `preparing` (cloning the bundled source, configuring) or `compiling`.'})),
    percent: s.optional(s.integer({description: "The build tool's own progress (cmake's or ninja's), 0 to 100, once it reports one."})),
    lines: s.optional(s.integer({description: 'Lines of output the build has written so far.'})),
    pid: s.optional(s.integer({description: 'The build process, running at low priority; it may belong to another service on this machine, which holds the build lock.'})),
    started: s.optional(s.integer({description: 'Milliseconds since the epoch.'})),
    finished: s.optional(s.integer({description: 'Milliseconds since the epoch.'})),
    error: s.optional(s.string({description: 'Why the build failed.'})),
    log_tail: s.optional(s.array(s.string(), {description: "The build's last lines of output."})),
    log_file: s.optional(s.string({description: "The build's whole output, on the machine that builds."})),
    binaries: s.optional(s.string({description: 'After a build, which binaries models launched now use, as the engine reports it.'})),
  },
  {title: 'EngineBuildStatus'},
)
export type EngineBuildStatus = s.Infer<typeof engineBuildStatusSchema> & {state: EngineBuildState}

/** `GET /v1/engine-builds`: every engine this service builds in the background; none on a supervisor, which runs no model. */
export const engineBuildListSchema = s.object({data: s.array(engineBuildStatusSchema)}, {title: 'EngineBuildList'})
export type EngineBuildList = {data: EngineBuildStatus[]}
