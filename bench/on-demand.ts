/**
 * What an idle unload costs the next request: the time to answer a one-token chat that launches its model on
 * demand (the model unloaded after its last request, keep_alive 0), against a launch of the same cached model
 * followed by the same chat, alternating in one run on tiny-random-llm. The goal is a ratio of at most 1.2.
 *
 *   npm run build && node --import tsx bench/on-demand.ts [--repeats 7]
 */
import {parseArgs} from 'node:util'

import {callApi, startService} from '../test/helpers/service.js'
import {show, summary} from './measure.js'

const {values: options} = parseArgs({options: {repeats: {default: '7', type: 'string'}}})
const TINY = {model_engine: 'llama.cpp', model_name: 'tiny-random-llm', n_ctx: 256, n_threads: 1}
const CHAT = {keep_alive: 0, max_tokens: 1, messages: [{content: 'Hi', role: 'user'}]}

const service = await startService()
const ok = async (what: string, call: Promise<{status: number; body: unknown}>) => {
  const {body, status} = await call
  if (status !== 200) throw new Error(`${what} answered ${status}: ${JSON.stringify(body)}`)
}
const timed = async (run: () => Promise<void>) => {
  const start = performance.now()
  await run()
  return performance.now() - start
}
const running = async () => ((await callApi(service, 'GET', '/v1/models')).body.data as Array<{id: string}>).map((model) => model.id)
const untilGone = async (uid: string) => {
  while ((await running()).includes(uid)) await new Promise((resolve) => setTimeout(resolve, 20))
}

try {
  // The first launch makes the weights; every launch measured finds them cached.
  await ok('warm-up launch', callApi(service, 'POST', '/v1/models', {...TINY, keep_alive: 0, model_uid: 'on-demand'}))
  await untilGone('on-demand')
  const launched: number[] = []
  const onDemand: number[] = []
  for (let repeat = 0; repeat < Number(options.repeats); repeat++) {
    launched.push(
      await timed(async () => {
        await ok('launch', callApi(service, 'POST', '/v1/models', {...TINY, model_uid: 'launched'}))
        await ok('chat', callApi(service, 'POST', '/v1/chat/completions', {...CHAT, model: 'launched'}))
      }),
    )
    await ok('terminate', callApi(service, 'DELETE', '/v1/models/launched'))
    onDemand.push(await timed(() => ok('chat on demand', callApi(service, 'POST', '/v1/chat/completions', {...CHAT, model: 'on-demand'}))))
    await untilGone('on-demand')
  }

  const ratios = onDemand.map((ms, index) => ms / launched[index])
  console.log(`launch + chat (cached weights): ${show(summary(launched), 0)} ms`)
  console.log(`chat on demand after an unload: ${show(summary(onDemand), 0)} ms`)
  console.log(`ratio (goal ≤ 1.2):             ${show(summary(ratios), 2)}`)
} finally {
  await service.stop()
}
