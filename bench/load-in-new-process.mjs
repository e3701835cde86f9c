// The baseline of `npm run bench`'s launch measurement: what a plain script does to load a model with
// node-llama-cpp in a new process. Plain JavaScript, so that no TypeScript loader adds to its start.
const {getLlama} = await import('node-llama-cpp')
const llama = await getLlama({build: 'never', gpu: false})
const model = await llama.loadModel({modelPath: process.argv[2]})
await model.createContext({contextSize: 1024, sequences: 8, threads: 1})
console.log('ready')
process.exit(0)
