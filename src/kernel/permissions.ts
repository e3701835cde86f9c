/**
 * The permissions of access control (spec §5.1) and the rule that maps a route to the one it needs. Every
 * route states its permission in `RouteDefinition.permission`; the HTTP layer, the API reference and the kernel's
 * checks of plugin routes all read it through `requiredPermission`, so they cannot disagree.
 */
import type {RouteDefinition} from './contracts.js'

export const PERMISSIONS = ['models:list', 'models:read', 'models:register', 'models:unregister', 'models:start', 'models:stop', 'metrics:read', 'admin'] as const
export type Permission = (typeof PERMISSIONS)[number]

/** What a route declares when anyone may call it, with or without credentials. */
export const PUBLIC = 'public'

/** What a route declares when any caller with a valid credential may call it, whatever their permissions (their own usage). */
export const AUTHENTICATED = 'authenticated'

/**
 * What the routes between workers and the supervisor declare. With access control on they need the cluster
 * token (no API key or user, not even admin, reaches them); with it off they are open like every route.
 */
export const CLUSTER = 'cluster'

/** `admin` allows everything; every other permission allows only the routes that name it. */
export const ADMIN: Permission = 'admin'

export const isPermission = (value: unknown): value is Permission => (PERMISSIONS as readonly unknown[]).includes(value)

/**
 * The permission a caller needs for a route. A route that declares none, or one that does not exist, is
 * admin-only: a plugin that forgets to say who may call its route must not open it to everyone.
 */
export function requiredPermission(route: Pick<RouteDefinition, 'permission'>): Permission | typeof PUBLIC | typeof CLUSTER | typeof AUTHENTICATED {
  return route.permission === PUBLIC || route.permission === CLUSTER || route.permission === AUTHENTICATED || isPermission(route.permission) ? route.permission : ADMIN
}
