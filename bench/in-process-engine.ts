/** Our llama.cpp engine loaded in this process, as a model process loads it, for benches that leave IPC, HTTP and SSE out. */
import host from '../plugins/engine-llama-cpp/src/host.js'

export function loadEngineInProcess(modelPath: string, parameters: Record<string, unknown>) {
  const quiet = {debug() {}, error: console.error, info() {}, warn: console.error}
  const spec = {model_format: 'ggufv2', model_size_in_billions: 1, quantization: 'f32'}
  return host.load(
    {family: {model_name: 'bench', model_specs: [spec]}, modelName: 'bench', modelPath, modelType: 'LLM', modelUid: 'bench', parameters, spec} as never,
    {log: quiet, signal: new AbortController().signal},
  )
}
