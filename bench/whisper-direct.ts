/**
 * Child process of `npm run bench` (bench/audio.ts): whisper.cpp through @fugood/whisper.node used directly, with no
 * service, no model process and no HTTP: one context per concurrent transcription, as the engine's `n_parallel`
 * makes them, with the engine's defaults. It reads the same WAV file the API is sent (whisper.node decodes it
 * itself, as whisper.cpp's command-line program does). Reads {modelPath, wavPath, threads, concurrency, repeats} as
 * JSON on stdin and prints each round's wall time in milliseconds as JSON.
 */
import {initWhisper} from '@fugood/whisper.node'
import {text} from 'node:stream/consumers'

const {concurrency, modelPath, repeats, threads, wavPath} = JSON.parse(await text(process.stdin))
const contexts = await Promise.all(Array.from({length: concurrency}, () => initWhisper({filePath: modelPath})))
const rounds: number[] = []
for (let round = 0; round < repeats; round++) {
  const start = performance.now()
  await Promise.all(contexts.map((context) => context.transcribeFile(wavPath, {language: 'en', maxThreads: threads, temperature: 0}).promise))
  rounds.push(performance.now() - start)
}

process.stdout.write(JSON.stringify(rounds))
await Promise.all(contexts.map((context) => context.release()))
