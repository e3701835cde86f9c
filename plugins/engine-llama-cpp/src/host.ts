/**
 * Runs inside a model instance's own process: loads one GGUF with node-llama-cpp and serves it according to the
 * model's type: LLMs generate (generator.ts), embedding models embed and rerankers rank (retrieval.ts).
 */
import type {ChatWrapper, Llama, LlamaModel} from 'node-llama-cpp'
import type {ChatTemplate} from './generator.js'
import type {LlamaCppOperations} from './errors.js'
import type {EngineHost, LoadedModel, LoadRequest, Logger} from 'service-toolkit'

import {stat} from 'node:fs/promises'

import {describeBinaries} from './auto-build-verdict.js'
import {chatWrapperResolver} from './chat-wrapper-cache.js'
import {buildInProgress, PASS_OVER_LOCAL_BUILDS} from './build-in-progress.js'
import {checkBatchSize, launchShape} from './defaults.js'
import {loadGenerator} from './generator.js'
import {useErrorFactory} from './errors.js'
import {checkGgufHeader, loadFailure} from './gguf-header.js'
import {gpuOption} from './gpu-option.js'
import {FIND_PORTABLE_BUILD, loadedCpuVariant} from './portable-build.js'
import {loadEmbedder, loadRanker} from './retrieval.js'

/**
 * How many threads decode by default. llama.cpp built with OpenMP (`servicectl engine build llama.cpp`) keeps
 * its threads warm, so all cores pay off at any size. node-llama-cpp's prebuilt binaries use ggml's own thread
 * pool, whose hand-over costs more than a small model's token: on 2 cores a 4M-parameter model (17 MB) decodes
 * at 652 tok/s on one thread and 100 on two (with OpenMP: 840 and 1405), where a 137M one (550 MB) does 86 on
 * two and 51 on one.
 */
const SINGLE_THREAD_BELOW_BYTES = 64 * 1024 ** 2

async function defaultThreads(modelPath: string, llama: Llama): Promise<number> {
  const cores = Math.max(1, llama.cpuMathCores)
  if (/OPENMP = 1/.test(llama.systemInfo)) return cores
  const {size} = await stat(modelPath)
  return size < SINGLE_THREAD_BELOW_BYTES ? 1 : cores
}

/**
 * Rendering of a hybrid model told not to think: Qwen3's template reads `enable_thinking`, which node-llama-cpp's
 * Qwen wrapper renders as discouraged thoughts. Wrappers of models that always think are the same either way.
 */
const WITHOUT_THINKING = {jinjaTemplate: {additionalRenderParameters: {enable_thinking: false}}, qwen: {thoughts: 'discourage' as const}}

/**
 * How the model renders chat prompts: the GGUF's own template, else the family's, else none (no chat). Matching
 * a GGUF template to node-llama-cpp's specialized wrappers renders it against many test chats, about 200 ms
 * of blocked event loop; node-llama-cpp's own LlamaChat does it when first used, and so does the engine, right
 * after the model reports ready rather than before. The rendering without thinking is resolved when first asked for.
 * The answer is kept in the engine's cache folder, so later loads of the same file skip the matching (chat-wrapper-cache.ts).
 */
async function chatTemplateOf(model: LlamaModel, request: LoadRequest, log: Logger, cacheDir?: string): Promise<ChatTemplate | undefined> {
  const {JinjaTemplateChatWrapper} = await import('node-llama-cpp')
  const {family} = request
  if (model.fileInfo.metadata.tokenizer?.chat_template) {
    const resolve = await chatWrapperResolver(model, request.modelPath, cacheDir, [undefined, WITHOUT_THINKING])
    let thinking: ChatWrapper | undefined
    let notThinking: ChatWrapper | undefined
    return {
      source: 'gguf',
      wrapper: (enableThinking = true) => (enableThinking ? (thinking ??= resolve(undefined)) : (notThinking ??= resolve(WITHOUT_THINKING))),
    }
  }

  if (family.chat_template) {
    try {
      const thinking = new JinjaTemplateChatWrapper({template: family.chat_template})
      const notThinking = new JinjaTemplateChatWrapper({...WITHOUT_THINKING.jinjaTemplate, template: family.chat_template})
      return {source: 'family', wrapper: (enableThinking = true) => (enableThinking ? thinking : notThinking)}
    } catch (error) {
      log.warn(`the family's chat_template cannot be used: ${(error as Error).message}`)
    }
  }

  return undefined
}

const host: EngineHost<LlamaCppOperations> = {
  async load(request, {cacheDir, errors, log, progress}) {
    useErrorFactory(errors)
    await checkGgufHeader(request.modelPath)
    const {getLlama} = await import('node-llama-cpp')
    const {parameters} = request
    // llama.cpp explains a failed load only in its log; the last errors are kept to say why.
    const recentErrors: string[] = []
    const building = await buildInProgress()
    if (building) log.info('llama.cpp is being built for this machine in the background: this model loads the prebuilt binaries; launch it again once the build has ended to use the local build.')
    const llama = await getLlama({
      ...(building ? PASS_OVER_LOCAL_BUILDS : FIND_PORTABLE_BUILD),
      build: 'never',
      gpu: await gpuOption(parameters.n_gpu_layers as number | undefined),
      // Its own notices (such as "the prebuilt binary with Vulkan support is not compatible with the current system,
      // falling back to using no GPU" where a Vulkan loader is installed without a GPU) would go to stderr unlogged.
      progressLogs: false,
      logger(level, message) {
        log.debug(`llama.cpp ${level}: ${message.trimEnd()}`)
        if (level === 'error' || level === 'fatal') recentErrors.splice(0, recentErrors.length - 2, message.trim())
      },
    })
    log.info(`loaded ${describeBinaries(llama.buildType, llama.gpu, await loadedCpuVariant())}`)
    const gpuLayers = parameters.n_gpu_layers === undefined ? undefined : parameters.n_gpu_layers === -1 ? 'max' : (parameters.n_gpu_layers as number)
    let model: LlamaModel
    try {
      model = await llama.loadModel({
        defaultContextFlashAttention: (parameters.flash_attn as boolean | undefined) ?? 'auto',
        gpuLayers,
        modelPath: request.modelPath,
        onLoadProgress: progress,
        useMmap: parameters.use_mmap as boolean | undefined,
      })
    } catch (error) {
      throw await loadFailure(request.modelPath, error as Error, llama, recentErrors)
    }

    let loaded: LoadedModel<LlamaCppOperations>
    try {
      const {contextSize, parallel, retrieval} = launchShape(request.modelType, parameters, model.trainContextSize)
      const options = {
        contextSize,
        log,
        model,
        parallel,
        request,
        threads: (parameters.n_threads as number | undefined) ?? (await defaultThreads(request.modelPath, llama)),
      }
      // Embedding and rerank contexts take their batch size from the context, not from n_batch.
      if (!retrieval) checkBatchSize(parameters.n_batch as number | undefined, contextSize * parallel)
      if (request.modelType === 'embedding') loaded = await loadEmbedder(options)
      else if (request.modelType === 'rerank') loaded = await loadRanker(options)
      else loaded = await loadGenerator({...options, chatTemplate: await chatTemplateOf(model, request, log, cacheDir), llama})
    } catch (error) {
      await model.dispose()
      await llama.dispose()
      throw error
    }

    return {
      ...loaded,
      async dispose() {
        await loaded.dispose()
        await model.dispose()
        await llama.dispose()
      },
    }
  },
}

export default host
