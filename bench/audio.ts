/**
 * `npm run bench` (after the LLM benchmark): audio through our API against the engines used directly, in the same run.
 *
 * - Transcription: a Whisper model smaller than tiny (2+2 layers, 128 wide, 16 text positions) and random
 *   weights, generated in whisper.cpp's ggml format, transcribing the same 25 s WAV file (one Whisper window) through
 *   `POST /v1/audio/transcriptions` and through @fugood/whisper.node used directly (bench/whisper-direct.ts, which
 *   decodes the file itself as whisper.cpp's command-line program does), with the same threads; real-time factor (wall time / audio length), one at a time and 4 at once (n_parallel 4).
 * - Speech: tiny-random-vits (VITS engine) and tiny-random-piper (Piper engine) through `POST /v1/audio/speech` (pcm,
 *   streamed) against each engine's own Python program called directly, rounds alternating: time to the first audio
 *   byte and real-time factor.
 *
 * Prints medians (min–max) and writes JSON to bench/results/. `node --import tsx bench/audio.ts --only speech` (or
 * `transcription`) runs one half.
 */
import {execa} from 'execa'
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {availableParallelism} from 'node:os'
import {join} from 'node:path'
import {parseArgs} from 'node:util'

import {writeRandomWhisperGgml} from '../plugins/engine-whisper-cpp/src/ggml/random-whisper.js'
import {pythonPathWithHelpers} from '../src/model-process/python-helpers.js'
import {writeTestAudio} from '../test/helpers/audio.js'
import {TEST_CACHE, uvFromPyPI} from '../test/helpers/python-tools.js'
import {callApi, closedPort, ROOT, servicectl, startService, temporaryDirectory} from '../test/helpers/service.js'

const {values: options} = parseArgs({options: {only: {type: 'string'}}})
const AUDIO_SECONDS = 25
const REPEATS = 3
const SPEECH_ROUNDS = 5
const SPEECH_INPUT = 'The quick brown fox jumps over the lazy dog. It was a bright cold day in April, and the clocks were striking thirteen. Call me Ishmael.'
const threads = availableParallelism()

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const show = (values: number[], digits = 3) => `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`

async function timed(run: () => Promise<unknown>, repeats = REPEATS): Promise<number[]> {
  const times: number[] = []
  for (let round = 0; round < repeats; round++) {
    const start = performance.now()
    await run()
    times.push(performance.now() - start)
  }

  return times
}

const directory = await temporaryDirectory('service-bench-audio-')
const modelPath = join(directory, 'ggml-bench-tiny.bin')
// A third of tiny's width and half its layers, so that a run fits a shared 2-core machine; 16 text positions, because
// random weights never end a window on purpose, so each decodes its few tokens (at most half the text context) and
// the encoder, the larger part of a real model's work, dominates as it does there.
await writeRandomWhisperGgml(modelPath, {audioLayers: 2, heads: 2, state: 128, textContext: 16, textLayers: 2})
const wav = await writeTestAudio(directory, 'wav', AUDIO_SECONDS)

const uv = await uvFromPyPI()
const unreachable = `http://127.0.0.1:${await closedPort()}`
const service = await startService({env: {HF_ENDPOINT: unreachable, PATH: `${uv}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')}})
const results: Record<string, unknown> = {audioSeconds: AUDIO_SECONDS, threads}
try {
  const family = {model_ability: ['audio2text'], model_family: 'whisper', model_name: 'bench-whisper', model_specs: [{model_format: 'ggml', model_uri: `file://${modelPath}`, quantization: 'f32'}]}
  await callApi(service, 'POST', '/v1/model_registrations/audio', {model: family, persist: false})
  const audio = new Blob([await readFile(wav)])
  const transcribe = async (uid: string) => {
    const form = new FormData()
    form.append('file', audio, 'speech.wav')
    form.append('model', uid)
    form.append('language', 'en')
    form.append('temperature', '0')
    const response = await fetch(`${service.url}/v1/audio/transcriptions`, {body: form, method: 'POST'})
    if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`)
    await response.text()
  }

  const direct = async (concurrency: number) => {
    const input = JSON.stringify({concurrency, modelPath, repeats: 1, wavPath: wav, threads: Math.max(1, Math.floor(threads / concurrency))})
    const {stdout} = await execa('node', ['--import', 'tsx', join(ROOT, 'bench/whisper-direct.ts')], {cwd: ROOT, input})
    return JSON.parse(stdout) as number[]
  }

  for (const concurrency of options.only === 'speech' ? [] : [1, 4]) {
    const uid = `bench-whisper-${concurrency}`
    const launched = await servicectl(['launch', '-n', 'bench-whisper', '-t', 'audio', '--model-engine', 'whisper.cpp', '--model-uid', uid, '--n_parallel', String(concurrency), '--n_threads', String(Math.max(1, Math.floor(threads / concurrency)))], {env: {SERVICE_ENDPOINT: service.url}})
    if (launched.exitCode !== 0) throw new Error(launched.stderr)
    await transcribe(uid)
    // Rounds alternate between the two, so that the shared machine's load falls on both alike.
    const api: number[] = []
    const engine: number[] = []
    for (let round = 0; round < REPEATS; round++) {
      api.push(...(await timed(() => Promise.all(Array.from({length: concurrency}, () => transcribe(uid))), 1)))
      engine.push(...(await direct(concurrency)))
    }

    // Real-time factor of the round: its wall time over the audio it transcribed (concurrency × the file).
    const rtf = (times: number[]) => times.map((ms) => ms / 1000 / (AUDIO_SECONDS * concurrency))
    results[`transcription_${concurrency}`] = {api: rtf(api), engine: rtf(engine)}
    console.log(`transcription, ${concurrency} at once: RTF through our API ${show(rtf(api))}, whisper.cpp directly ${show(rtf(engine))}, speed ratio ${(median(engine) / median(api)).toFixed(3)}`)
    await servicectl(['terminate', '--model-uid', uid], {env: {SERVICE_ENDPOINT: service.url}})
  }

  if (options.only !== 'transcription') {
    const speak = async (url: string, body: Record<string, unknown>, sampleRate: number) => {
      const start = performance.now()
      const response = await fetch(url, {body: JSON.stringify({input: SPEECH_INPUT, ...body}), headers: {'content-type': 'application/json'}, method: 'POST'})
      let first = 0
      let bytes = 0
      for await (const chunk of response.body!) {
        first ||= performance.now() - start
        bytes += chunk.length
      }

      const seconds = (performance.now() - start) / 1000
      return {rtf: seconds / (bytes / 2 / sampleRate), ttfb: first}
    }

    // Each engine's speech through our API (pcm, which it answers at 24 kHz) against its own program called directly
    // (at the model's 16 kHz), in an environment the service made for it; rounds alternate between the two.
    const compare = async (name: string, engine: {name: string; voice: string; program: (port: number) => Promise<string[]>}) => {
      const launched = await servicectl(['launch', '-n', name, '-t', 'audio', '--model-engine', engine.name], {env: {SERVICE_ENDPOINT: service.url}})
      if (launched.exitCode !== 0) throw new Error(launched.stderr)
      const port = await closedPort()
      const [python, ...args] = await engine.program(port)
      // As the service starts it: its HTTP helper on the PYTHONPATH.
      const program = execa(python, args, {env: {PYTHONPATH: pythonPathWithHelpers(process.env.PYTHONPATH)}, reject: false})
      try {
        const base = `http://127.0.0.1:${port}`
        for (let i = 0; i < 600; i++) {
          if (await fetch(`${base}/health`).then((r) => r.ok, () => false)) break
          await new Promise((resolve) => setTimeout(resolve, 250))
        }

        const viaApi = () => speak(`${service.url}/v1/audio/speech`, {model: name, response_format: 'pcm', voice: engine.voice}, 24_000)
        const direct = () => speak(`${base}/speak`, {voice: engine.voice}, 16_000)
        await viaApi()
        await direct()
        const samples = {api: [] as Array<{rtf: number; ttfb: number}>, engine: [] as Array<{rtf: number; ttfb: number}>}
        for (let round = 0; round < SPEECH_ROUNDS; round++) {
          samples.api.push(await viaApi())
          samples.engine.push(await direct())
        }

        const of = (runs: Array<{rtf: number; ttfb: number}>) => ({rtf: runs.map((s) => s.rtf), ttfb: runs.map((s) => s.ttfb)})
        const measured = {api: of(samples.api), engine: of(samples.engine)}
        results[`speech_${engine.name}`] = measured
        console.log(
          `speech (${name}, ${engine.name}): time to first byte through our API ${show(measured.api.ttfb, 1)} ms, program directly ${show(measured.engine.ttfb, 1)} ms; ` +
            `RTF ${show(measured.api.rtf)} against ${show(measured.engine.rtf)}`,
        )
      } finally {
        program.kill()
        await servicectl(['terminate', '--model-uid', name], {env: {SERVICE_ENDPOINT: service.url}})
      }
    }

    // The environment the service made with `pkg` in it and, where given, without `without`.
    const environmentWith = async (pkg: string, without = '') => {
      const test = without ? `[ -d "$d/../${without}" ] || ` : ''
      const {stdout} = await execa('bash', ['-c', `for d in ${join(TEST_CACHE, 'virtualenv')}/*/lib/python3*/site-packages/${pkg}; do ${test}{ echo "$d"; break; }; done`])
      return join(stdout, '../../../../bin/python')
    }

    await compare('tiny-random-vits', {
      name: 'vits',
      program: async (port) => [await environmentWith('transformers'), '-u', join(ROOT, 'plugins/engine-vits/python/vits_server.py'), '--model', join(service.home, 'cache', 'tiny-random-vits--pytorch--none'), '--port', String(port), '--voices', '["default","second"]'],
      voice: 'default',
    })
    await compare('tiny-random-piper', {
      name: 'piper',
      program: async (port) => [await environmentWith('piper', 'torch'), '-u', join(ROOT, 'plugins/engine-piper/python/piper_server.py'), '--model', join(service.home, 'cache', 'tiny-random-piper--onnx--none', 'tiny-random-piper.onnx'), '--port', String(port)],
      voice: 'p226',
    })
  }
} finally {
  await service.stop()
}

await mkdir(join(ROOT, 'bench/results'), {recursive: true})
const file = join(ROOT, 'bench/results', `audio-${new Date().toISOString().replaceAll(':', '-')}.json`)
await writeFile(file, JSON.stringify(results, null, 2))
console.log(`wrote ${file}`)
