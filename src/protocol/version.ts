/** Every answer of the service carries its package version in this header; clients and workers compare it with their own. */
export const VERSION_HEADER = 'x-service-version'
