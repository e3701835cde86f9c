/**
 * What python/service_http.py gives the programs that share it beyond HTTP (the diffusers and stable-diffusion.cpp
 * servers, Piper's and VITS'): `load_request()`, the `--port` and `--request` a program is started with, and
 * `SpeechHandler`, POST /speak streamed as PCM a sentence a chunk. Run for real: a small program using both, started by
 * the kernel's program spawner, called over HTTP.
 */
import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {programSpawner, type RunningProgram} from '../../src/model-process/program-spawner.js'
import {closedPort, temporaryDirectory, until} from '../helpers/service.js'

const PROGRAM = `
import time
from service_http import BadRequest, SpeechHandler, load_request, serve

port, request = load_request()


class Handler(SpeechHandler):
    def speak(self, body):
        if body.get("voice") not in request["voices"]:
            raise BadRequest("no such voice", "voice")
        count = body.get("sentences", 3)

        def pcm():
            for index in range(count):
                if body.get("slow"):
                    time.sleep(0.05)
                yield bytes([index]) * 4

        self.stream_speech(request["rate"], pcm(), count)


print(f"serving {request['modelName']} on port {port}", flush=True)
serve(Handler, port)
`

describe('Python engine programs: load_request and SpeechHandler of the service_http helper', function () {
  this.timeout(30_000)
  let program: RunningProgram
  let base: string
  let port: number

  before(async () => {
    const folder = await temporaryDirectory('service-python-speech-')
    await writeFile(join(folder, 'server.py'), PROGRAM)
    port = await closedPort()
    base = `http://127.0.0.1:${port}`
    const spawn = await programSpawner()
    const request = JSON.stringify({modelName: 'tiny-voice', rate: 16_000, voices: ['default']})
    program = spawn({args: ['-u', join(folder, 'server.py'), '--port', String(port), '--request', request], env: {PYTHONPATH: ''}, file: 'python3', logFile: join(folder, 'program.log')})
    await until(async () => (await fetch(`${base}/health`).catch(() => undefined))?.ok || undefined, 'the program to answer /health')
  })

  after(() => program?.kill('SIGKILL'))

  const speak = (body: object, signal?: AbortSignal) => fetch(`${base}/speak`, {body: JSON.stringify(body), headers: {'content-type': 'application/json'}, method: 'POST', signal})

  it('reads the port and the load request it was started with', () => {
    expect(program.outputTail().join('\n')).to.include(`serving tiny-voice on port ${port}`)
  })

  it('streams speech as PCM with its sample rate, and refuses a request before any audio', async () => {
    const answer = await speak({voice: 'default'})
    expect(answer.status).to.equal(200)
    expect(answer.headers.get('content-type')).to.equal('audio/pcm')
    expect(answer.headers.get('x-sample-rate')).to.equal('16000')
    expect([...new Uint8Array(await answer.arrayBuffer())]).to.deep.equal([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    const refused = await speak({voice: 'alloy'})
    expect(refused.status).to.equal(400)
    expect(await refused.json()).to.deep.equal({error: {message: 'no such voice', param: 'voice', type: 'invalid_request_error'}})
  })

  it('stops when the client goes away, saying after how many of the sentences', async () => {
    const controller = new AbortController()
    const answer = await speak({sentences: 1000, slow: true, voice: 'default'}, controller.signal)
    await answer.body!.getReader().read()
    controller.abort()
    await until(() => program.outputTail().some((line) => /^speech stopped: the client went away after \d+ of 1000 sentences$/.test(line)) || undefined, 'the program to say it stopped')
    expect((await fetch(`${base}/health`)).ok, 'the program keeps serving').to.equal(true)
  })
})
