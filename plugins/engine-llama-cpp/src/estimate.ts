/**
 * `servicectl cal-model-mem` for GGUF models: reads only the file's header (from the cache, or from the hub
 * with HTTP range requests) and lets node-llama-cpp's GgufInsights work out the memory of the weights, the
 * KV cache and the compute buffers for the context and parallelism a launch would use. Runs in a short-lived
 * child process, since GgufInsights loads llama.cpp's native binding.
 */
import type {MemoryEstimator} from 'service-toolkit'

import {buildInProgress, PASS_OVER_LOCAL_BUILDS} from './build-in-progress.js'
import {launchShape} from './defaults.js'
import {useErrorFactory} from './errors.js'
import {checkGgufHeader, notGguf} from './gguf-header.js'

const isNetwork = (file: string) => /^https?:/.test(file)
/** node-llama-cpp's errors from the network (a hub that does not answer), as opposed to ones about the file's content. */
const isFetchError = (error: unknown) => (error as Error)?.name === 'FetchError' || /fetch/i.test((error as Error)?.message ?? '')

const estimate: MemoryEstimator = async ({files, headers, modelType, parameters}, {errors}) => {
  useErrorFactory(errors)
  const {getLlama, GgufInsights, readGgufFileInfo} = await import('node-llama-cpp')
  // Parts are read one by one and spliced here: a hub's download URL does not always end in the part's name.
  const parts = await Promise.all(
    files.map(async (file) => {
      if (!isNetwork(file)) await checkGgufHeader(file)
      try {
        return await readGgufFileInfo(file, {
          fetchHeaders: headers,
          fetchRetryOptions: {retries: 2},
          logWarnings: false,
          sourceType: isNetwork(file) ? 'network' : 'filesystem',
          spliceSplitFiles: false,
        })
      } catch (error) {
        // The parser's own message quotes what it found in the file, which is never passed on.
        if (isNetwork(file) && isFetchError(error)) throw error
        throw notGguf(file, /magic/i.test((error as Error)?.message ?? '') ? undefined : 'has a GGUF header that cannot be read')
      }
    }),
  )
  const fileInfo = {
    ...parts[0],
    fullTensorInfo: parts.flatMap((part) => part.tensorInfo ?? []),
    splicedParts: parts.length,
    totalTensorCount: parts.reduce((sum, part) => sum + Number(part.tensorCount), 0),
  }
  // Without a Llama of its own, GgufInsights loads one that waits for a running build as a launch would
  // (build-in-progress.ts); like the one it loads, this one lives as long as the estimator's short-lived process.
  const llama = (await buildInProgress()) ? await getLlama({...PASS_OVER_LOCAL_BUILDS, build: 'never', gpu: false, progressLogs: false}) : undefined
  const insights = await GgufInsights.from(fileInfo, llama)
  const {contextSize: contextLength, parallel: sequences} = launchShape(modelType, parameters, insights.trainContextSize)
  const requestedLayers = parameters.n_gpu_layers as number | undefined
  const gpuLayers = requestedLayers === undefined ? 0 : requestedLayers === -1 ? insights.totalLayers : Math.min(requestedLayers, insights.totalLayers)
  const weights = await insights.estimateModelResourceRequirementsV2({gpuLayers})
  const context = await insights.estimateContextResourceRequirementsV2({contextSize: contextLength, modelGpuLayers: gpuLayers, sequences})
  // The V2 estimate simulates llama.cpp's allocation as a whole; the KV cache (with the output buffers) is the
  // part of it without the compute graph, which the arithmetic estimate can leave out.
  const cache = insights.estimateContextResourceRequirements({contextSize: contextLength, includeGraphOverhead: false, modelGpuLayers: gpuLayers, sequences})
  const contextBytes = context.cpuRam + context.gpuVram
  const kvCache = Math.min(cache.cpuRam + cache.gpuVram, contextBytes)
  const weightBytes = weights.cpuRam + weights.gpuVram
  return {
    architecture: fileInfo.metadata.general?.architecture ?? null,
    context_length: contextLength,
    gpu_bytes: weights.gpuVram + context.gpuVram,
    gpu_layers: gpuLayers,
    kv_cache_bytes: kvCache,
    layers: insights.totalLayers,
    overhead_bytes: contextBytes - kvCache,
    parallel: sequences,
    parameters: insights.totalParameters,
    total_bytes: weightBytes + contextBytes,
    train_context_length: insights.trainContextSize ?? null,
    weights_bytes: weightBytes,
  }
}

export default estimate
