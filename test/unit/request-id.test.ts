/**
 * Request ids: a caller's `X-Request-Id` is kept when a log can quote it safely, replaced otherwise.
 */
import {expect} from 'chai'

import {MAX_REQUEST_ID_LENGTH, requestIdFor} from '../../src/server/request-id.js'

describe('request ids', () => {
  const generated = () => 'generated'

  it("keeps the caller's id when it is printable and short", () => {
    for (const id of ['abc-123', '0af7651916cd43dd8448eb211c80319c', 'x'.repeat(MAX_REQUEST_ID_LENGTH), 'trace/1:2@host'])
      expect(requestIdFor(id, generated)).to.equal(id)
  })

  it('makes one when there is none, or the one sent is empty, too long, or holds spaces or control characters', () => {
    for (const id of [undefined, '', 'x'.repeat(MAX_REQUEST_ID_LENGTH + 1), 'a b', 'abc\n2026-01-01 info forged', 'abc\u001B[2J', 'ünïcode'])
      expect(requestIdFor(id, generated)).to.equal('generated')
  })

  it('makes UUIDs by default', () => {
    expect(requestIdFor(undefined)).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })
})
