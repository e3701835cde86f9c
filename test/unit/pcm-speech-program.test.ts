/** `speak` of a program answering raw PCM, when the program refuses or fails: OpenAI's error body, or anything else. */
import {expect} from 'chai'

import {pcmSpeechOperations} from '../../src/kernel/pcm-speech-program.js'
import {type AnsweringServer, answeringServer} from '../helpers/answering-server.js'

describe('PCM speech program: refusals and failures', () => {
  let server: AnsweringServer

  before(async () => (server = await answeringServer()))
  after(() => server.close())

  const failure = async () => {
    const endpoint = {baseUrl: server.baseUrl, modelUid: 'voice', port: server.port, signal: new AbortController().signal}
    try {
      for await (const _ of pcmSpeechOperations().speak({input: 'hi', speed: 1, voice: 'default'}, endpoint));
    } catch (error) {
      return error
    }

    throw new Error('expected a failure')
  }

  it("answers the program's refusal as a 400 on its field, and any other failure as a 500 naming the program with what it said", async () => {
    server.answer = (response) => {
      response.writeHead(400, {'content-type': 'application/json'})
      response.end(JSON.stringify({error: {message: 'voice must be one of: default', param: 'voice'}}))
    }

    expect(await failure()).to.deep.include({code: 'invalid_request', message: 'voice must be one of: default', param: 'voice', status: 400})
    server.answer = (response) => {
      response.writeHead(500, {'content-type': 'text/plain'})
      response.end('Traceback (most recent call last): ... RuntimeError: espeak failed\n')
    }

    expect(await failure()).to.deep.include({code: 'generation_failed', message: 'the speech program failed: Traceback (most recent call last): ... RuntimeError: espeak failed', status: 500})
  })
})
