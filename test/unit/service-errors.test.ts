/** What the error boundary makes of what a route throws: its own errors as they are, a stop for a client gone, else an internal error. */
import {expect} from 'chai'

import {ServiceError, toServiceError} from '../../src/kernel/errors.js'

describe('errors thrown to the error boundary', () => {
  it('keeps a ServiceError, turns an abort into a 499 rather than an internal error, and hides anything else', () => {
    const own = new ServiceError(400, 'invalid_request', 'bad', 'model')
    expect(toServiceError(own)).to.equal(own)
    const controller = new AbortController()
    controller.abort()
    expect(toServiceError(controller.signal.reason)).to.deep.include({code: 'request_aborted', status: 499})
    expect(toServiceError(new TypeError('x is undefined'))).to.deep.include({code: 'internal_error', status: 500})
  })
})
