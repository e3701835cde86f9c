import {expect} from 'chai'

import {errorFromReply, sendJson} from '../../src/client/http.js'

const reply = (status: number, body: string) => new Response(body, {status, statusText: 'Status'})

describe('JSON caller shared by the client and remote workers', () => {
  it('reads the service error shape, and the shapes Xinference answers with', async () => {
    const openAi = await errorFromReply(reply(400, JSON.stringify({error: {code: 'invalid_request', message: 'bad n_ctx', param: 'n_ctx'}})))
    expect(openAi.error).to.include({code: 'invalid_request', message: 'bad n_ctx', param: 'n_ctx', status: 400})
    expect((await errorFromReply(reply(404, JSON.stringify({detail: 'Model not found'})))).error).to.include({code: '404', message: 'Model not found', status: 404})
    expect((await errorFromReply(reply(500, JSON.stringify({error: 'boom'})))).error).to.include({message: 'boom', status: 500})
  })

  it('leaves a reply that names no error to the caller, with its text', async () => {
    expect(await errorFromReply(reply(502, '<html>Bad Gateway</html>'))).to.deep.equal({text: '<html>Bad Gateway</html>'})
    expect(await errorFromReply(reply(500, JSON.stringify({ok: false})))).to.deep.equal({text: '{"ok":false}'})
  })

  it('sends JSON with the bearer credential, and no body or content type for a call without one', async () => {
    const seen: RequestInit[] = []
    const fetcher = (async (_url: string, init: RequestInit) => (seen.push(init), new Response('{}'))) as unknown as typeof fetch
    await sendJson(fetcher, 'http://x/v1/models', {body: {a: 1}, credential: 'sk-1', method: 'POST'})
    await sendJson(fetcher, 'http://x/v1/models', {method: 'GET'})
    expect(seen[0]).to.deep.include({body: '{"a":1}', headers: {accept: 'application/json', authorization: 'Bearer sk-1', 'content-type': 'application/json'}, method: 'POST'})
    expect(seen[1]).to.deep.include({body: undefined, headers: {accept: 'application/json'}, method: 'GET'})
  })
})
