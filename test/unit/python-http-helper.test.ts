/**
 * The Python helper every engine program builds on (python/service_http.py), run for real: a small program that
 * imports it, started by the kernel's program spawner with nothing on PYTHONPATH (the spawner adds the helpers), and
 * called over HTTP: health, JSON and server-sent event answers (chunked, ended whole by end_events), a refusal naming its field, a 500 with the reason,
 * an unknown route, a body that is not JSON, and a clean exit on SIGTERM.
 */
import {expect} from 'chai'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {programSpawner, type RunningProgram} from '../../src/model-process/program-spawner.js'
import {closedPort, temporaryDirectory, until} from '../helpers/service.js'

const PROGRAM = `
import sys
from service_http import BadRequest, JsonHandler, serve


class Handler(JsonHandler):
    protocol_version = "HTTP/1.1"

    def get_routes(self):
        return {"/hello": lambda: self.send_json(200, {"hello": "world"})}

    def post_routes(self):
        return {"/echo": self.echo, "/events": self.events, "/broken": self.broken, "/lines": self.lines}

    def echo(self, request):
        if "text" not in request:
            raise BadRequest("text is required.", "text")
        self.send_json(200, request)

    def events(self, request):
        self.start_events()
        for index in range(request["count"]):
            self.send_event({"index": index})
        self.send_event("[DONE]")
        self.end_events()

    def broken(self, request):
        raise RuntimeError("the model fell over")

    def lines(self, request):
        self.line({"type": "progress", "step": 1})
        raise RuntimeError("the model fell over mid-answer")


print("serving", flush=True)
serve(Handler, int(sys.argv[1]))
`

describe('Python engine programs: the service_http helper', function () {
  this.timeout(30_000)
  let program: RunningProgram
  let base: string

  before(async () => {
    const folder = await temporaryDirectory('service-python-helper-')
    await writeFile(join(folder, 'server.py'), PROGRAM)
    const port = await closedPort()
    base = `http://127.0.0.1:${port}`
    const spawn = await programSpawner()
    program = spawn({args: ['-u', join(folder, 'server.py'), String(port)], env: {PYTHONPATH: ''}, file: 'python3', logFile: join(folder, 'program.log')})
    await until(async () => (await fetch(`${base}/health`).catch(() => undefined))?.ok || undefined, 'the program to answer /health')
  })

  after(() => program?.kill('SIGKILL'))

  const post = (path: string, body: string) => fetch(`${base}${path}`, {body, headers: {'content-type': 'application/json'}, method: 'POST'})

  it('is importable by a program the kernel starts, which answers GET /health and its own GET routes', async () => {
    const health = await fetch(`${base}/health`)
    expect(await health.json()).to.deep.equal({status: 'ok'})
    expect(await (await fetch(`${base}/hello`)).json()).to.deep.equal({hello: 'world'})
  })

  it('answers JSON and server-sent events', async () => {
    expect(await (await post('/echo', '{"text": "hi"}')).json()).to.deep.equal({text: 'hi'})
    const events = await post('/events', '{"count": 2}')
    expect(events.headers.get('content-type')).to.equal('text/event-stream')
    expect(await events.text()).to.equal('data: {"index": 0}\n\ndata: {"index": 1}\n\ndata: [DONE]\n\n')
  })

  it('answers a refusal with a 400 naming the field, a failure with a 500 and its reason, an unknown route with a 404', async () => {
    const refused = await post('/echo', '{}')
    expect(refused.status).to.equal(400)
    expect(await refused.json()).to.deep.equal({error: {message: 'text is required.', param: 'text', type: 'invalid_request_error'}})
    const notJson = await post('/echo', '{')
    expect(notJson.status).to.equal(400)
    expect(((await notJson.json()) as {error: {message: string}}).error.message).to.match(/^the request body is not JSON/)
    const failed = await post('/broken', '{}')
    expect(failed.status).to.equal(500)
    expect(((await failed.json()) as {error: {message: string}}).error.message).to.equal('RuntimeError: the model fell over')
    const missing = await post('/nowhere', '{}')
    expect(missing.status).to.equal(404)
    expect(((await missing.json()) as {error: {message: string}}).error.message).to.equal('no route POST /nowhere')
    expect((await fetch(`${base}/health`)).ok, 'the program keeps serving').to.equal(true)
  })

  it('answers JSON lines, a failure after the first being an error line of its own, and ends the answer with the connection', async () => {
    const answer = await post('/lines', '{}')
    expect(answer.status).to.equal(200)
    expect(answer.headers.get('content-type')).to.equal('application/x-ndjson')
    const lines = (await answer.text()).trim().split('\n').map((line) => JSON.parse(line))
    expect(lines).to.deep.equal([
      {step: 1, type: 'progress'},
      {message: 'RuntimeError: the model fell over mid-answer', param: null, status: 500, type: 'error'},
    ])
    expect((await fetch(`${base}/health`)).ok, 'the program keeps serving').to.equal(true)
  })

  it('exits 0 on SIGTERM, saying so in its output', async () => {
    program.kill('SIGTERM')
    expect(await program.exited).to.deep.equal({exitCode: 0, signal: null})
    expect(program.outputTail().join('\n')).to.include('stopping on SIGTERM')
  })
})
