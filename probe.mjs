import {getLlama, LlamaChat} from 'node-llama-cpp'
const llama = await getLlama({gpu: false, build: 'never'})
console.log('build', llama.buildType)
const prompt = 'Write a long story about a lighthouse keeper who finds a map, and tell it slowly, with every detail of the sea and sky.'
for (const file of process.argv.slice(2)) {
  const model = await llama.loadModel({modelPath: file})
  for (const threads of [1, 2]) for (const n of [1, 4]) {
    const ctx = await model.createContext({contextSize: 1024, sequences: n, threads})
    const chats = Array.from({length: n}, () => new LlamaChat({contextSequence: ctx.getSequence(), autoDisposeSequence: false}))
    const run = () => Promise.all(chats.map((c) => c.generateResponse([{type: 'user', text: prompt}, {type: 'model', response: []}], {maxTokens: 64, temperature: 0})))
    await run()
    const rates = []
    for (let i = 0; i < 3; i++) { const t = performance.now(); await run(); rates.push((64 * n) / ((performance.now() - t) / 1000)) }
    rates.sort((a, b) => a - b)
    console.log(file.split('/').pop(), 'threads', threads, 'seqs', n, rates[1].toFixed(1), 'tok/s')
    await ctx.dispose()
  }
  await model.dispose()
}
