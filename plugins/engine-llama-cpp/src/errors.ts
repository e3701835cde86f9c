/** Errors in the shape the kernel renders (status, code, message, param); a plain Error would become a 500. */
export const requestError = (message: string, param?: string) => Object.assign(new Error(message), {code: 'invalid_request', param, status: 400})
