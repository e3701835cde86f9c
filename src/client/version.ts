/**
 * The package version this client speaks, compared with the service's `x-service-version` header. It is
 * written here rather than read from package.json so the client loads without a file system (in a browser);
 * a unit test keeps it equal to package.json's.
 */
export const CLIENT_VERSION = '0.1.0'
