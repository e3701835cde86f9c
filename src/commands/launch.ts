import {Flags} from '@oclif/core'

import type {LaunchOptions} from '../client/client.js'

import {ClientCommand} from '../cli/base-command.js'
import {splitEngineOptions} from '../cli/extra-options.js'
import {gpuCountFlag, gpuIndicesFlag} from '../cli/flags.js'
import {CommandStopped} from '../cli/json-command.js'
import {launchFieldsFromFlags} from '../cli/launch-flags.js'
import {createProgressView} from '../cli/progress.js'
import {confirm} from '../cli/prompt.js'

/** Exit code of a launch cancelled with Ctrl-C, as for any command interrupted by SIGINT. */
const INTERRUPTED = 130

export default class Launch extends ClientCommand<typeof Launch> {
  static description = `Launch a model. Any other \`--name value\` pair is passed to the engine (for example --n_ctx 4096).

The first launch of a catalogue model downloads its weights into SERVICE_HOME/cache; progress is shown while it downloads and loads. Ctrl-C asks whether to cancel the launch (it cancels at once when stdin is not a terminal); a cancelled launch leaves nothing behind.`
  static examples = [
    '<%= config.bin %> launch -n qwen2.5-instruct --model-engine llama.cpp -f ggufv2 -s 0_5 -q q4_0',
    '<%= config.bin %> launch -n my-model --model-engine llama.cpp --n_ctx 2048 --n_parallel 8',
  ]
  static launchFlags = {
    'download-hub': Flags.option({description: 'Hub to download weights from.', options: ['huggingface', 'modelscope'] as const})(),
    'gpu-idx': gpuIndicesFlag({description: 'GPUs to give the model alone, as nvidia-smi numbers them, e.g. 0 or 0,1.'}),
    'keep-alive': Flags.string({description: 'Unload the model once idle this long ("5m", "1h", seconds; -1 never); a request brings it back [default: SERVICE_KEEP_ALIVE, else never].'}),
    'model-engine': Flags.string({description: 'Engine (also -en): llama.cpp, vllm, sglang, transformers, MLX; required for LLM.'}),
    'model-format': Flags.string({char: 'f', description: 'Model format, e.g. ggufv2.'}),
    'model-name': Flags.string({char: 'n', description: 'Name of a registered model.', required: true}),
    'model-type': Flags.string({char: 't', description: 'Model type (found from the catalogue when omitted).'}),
    'model-uid': Flags.string({char: 'u', description: 'Uid for the running model [default: the model name].'}),
    'n-gpu': gpuCountFlag({description: '"auto", or a number of GPUs.'}),
    'on-demand': Flags.boolean({allowNo: true, description: 'Launch it again when a request names it while it is not running (--no-on-demand: never) [default: SERVICE_LOAD_ON_DEMAND, and always after an idle unload].'}),
    quantization: Flags.string({char: 'q', description: 'Quantization, e.g. q4_0.'}),
    replica: Flags.integer({char: 'r', description: 'Number of instances.', min: 1}),
    'size-in-billions': Flags.string({char: 's', description: 'Size in billions, e.g. 7 or 0_5.'}),
  }
  static flags = Launch.launchFlags
  private engineOptions: Record<string, string> = {}

  /** Engine parameters are taken out of argv before oclif parses it, since oclif refuses undeclared flags. */
  async init(): Promise<void> {
    const {engineOptions, rest} = splitEngineOptions(this.argv, Launch.flags, ClientCommand.baseFlags)
    this.engineOptions = engineOptions
    this.argv = rest
    await super.init()
  }

  async run(): Promise<{model_uid: string}> {
    const {flags} = this
    const options: LaunchOptions = {...this.engineOptions, ...launchFieldsFromFlags(Launch.launchFlags, flags)}
    const client = this.client()
    const uid = await client.launch(options, {waitReady: false})
    const view = createProgressView({columns: process.stderr.columns, tty: Boolean(process.stderr.isTTY), write: (text) => process.stderr.write(text)})
    const stop = new AbortController()
    const asking = new AbortController()
    const interrupted = async () => {
      if (process.stdin.isTTY) {
        view.pause()
        const cancel = await confirm(`Do you want to cancel the launch of ${uid}? (y/[n]) `, {interruptMeansYes: true, signal: asking.signal})
        view.resume()
        if (!cancel) return
      }

      stop.abort()
    }

    const onSigint = () => void interrupted()
    process.on('SIGINT', onSigint)
    try {
      await client.waitUntilReady(uid, {onProgress: (progress) => view.update(progress), signal: stop.signal})
    } catch (error) {
      if (!stop.signal.aborted) throw error
      view.finish()
      this.logToStderr(`Cancelling the launch of ${uid}…`)
      await client.cancel(uid)
      throw new CommandStopped('cancelled', `Cancelled the launch of ${uid}; nothing of it was kept.`, INTERRUPTED)
    } finally {
      process.off('SIGINT', onSigint)
      asking.abort()
      view.finish()
    }

    this.log(`Model uid: ${uid}`)
    return {model_uid: uid}
  }
}
