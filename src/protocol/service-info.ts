// Wire types of the service's own routes (plugins, version, access control, login, health); see launch.ts for why they live in src/protocol/.
import * as s from '../kernel/schema.js'

const problem = s.object({message: s.string(), plugin: s.string()}, {title: 'PluginProblem'})

/** `GET /v1/cluster/plugins`. */
export const pluginsReplySchema = s.object(
  {
    engines: s.array(
      s.object(
        {formats: s.array(s.string()), model_types: s.array(s.string()), name: s.string(), parameters: s.record(s.record(s.unknown()), {description: 'Engine parameters by name.'}), plugin: s.string()},
        {title: 'EngineInfo'},
      ),
    ),
    model_types: s.array(s.object({description: s.string(), name: s.string(), plugin: s.string()}, {title: 'ModelTypeInfo'})),
    plugins: s.array(s.string(), {description: 'The plugins loaded, by package name.'}),
    problems: s.array(problem, {description: 'What went wrong while loading plugins and registrations.'}),
    registration_columns: s.record(s.array(s.object({field: s.string(), header: s.string()}, {title: 'RegistrationColumn'})), {
      description: 'By model type, the columns `servicectl registrations` shows between Type and Is-built-in: a header and the family field under it.',
    }),
  },
  {title: 'PluginsReply'},
)
export type PluginsReply = s.Infer<typeof pluginsReplySchema>

export const versionReplySchema = s.object({version: s.string()}, {title: 'VersionReply'})
export const authReplySchema = s.object({auth: s.boolean({description: 'Whether access control is on.'})}, {title: 'AuthReply'})
export const healthReplySchema = s.object({status: s.literal('ok')}, {title: 'HealthReply'})

/** RFC 6749 §5.1's successful token response. */
export const tokenReplySchema = s.object(
  {access_token: s.string(), expires_in: s.integer({description: 'Seconds until it expires.'}), token_type: s.literal('bearer')},
  {title: 'TokenReply'},
)

/** `POST /v1/auth/logout`. */
export const logoutReplySchema = s.object({revoked: s.literal(true), username: s.string({description: 'Whose token was revoked.'})}, {title: 'LogoutReply'})

/** `POST /v1/auth/users/{username}/revoke`. */
export const userRevocationReplySchema = s.object(
  {
    tokens_valid_from: s.string({description: 'ISO time: tokens issued before it are refused; a login from then on gets one that works.'}),
    username: s.string(),
  },
  {title: 'UserRevocationReply'},
)
