/**
 * Launch a model of a hub by its name, as `servicectl launch -n hf.co/{user}/{repo}:{quant}` does: a repository written
 * without its hub's host is looked for on the hub chosen beside it. The service lists the repository, registers the
 * quantization asked for (Q4_K_M, else the smallest, when none is) and downloads it with the progress every launch shows.
 */
import {useState} from 'preact/hooks'

import {client} from '../api.js'
import {ErrorLine, useAction} from '../ui.js'
import {LaunchProgressView} from './launch-progress.js'

const HOSTS = {huggingface: 'hf.co', modelscope: 'modelscope.cn'} as const
const WITH_HOST = /^[\w.-]+\.(co|cn)\//i

export function HubLaunchForm() {
  const [name, setName] = useState('')
  const [hub, setHub] = useState<keyof typeof HOSTS>('huggingface')
  const [uid, setUid] = useState('')
  const [launched, setLaunched] = useState<string | undefined>(undefined)
  const launch = useAction()
  const modelName = WITH_HOST.test(name.trim()) ? name.trim() : `${HOSTS[hub]}/${name.trim()}`

  const submit = (event: Event) => {
    event.preventDefault()
    void launch.run(async () => setLaunched(await client.launch({model_name: modelName, ...(uid ? {model_uid: uid} : {})}, {waitReady: false})))
  }

  return (
    <form aria-label="Launch from a hub" class="panel launch-form" onSubmit={submit}>
      <h2>From a hub</h2>
      <p class="muted">Any GGUF repository of Hugging Face or ModelScope, by its name and, after a colon, the quantization (Q4_K_M when none is given).</p>
      <div class="grid">
        <label>
          Hub model
          <input maxLength={256} onInput={(event) => setName(event.currentTarget.value)} placeholder="hf.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M" required value={name} />
        </label>
        <label>
          Download from
          <select disabled={WITH_HOST.test(name.trim())} onChange={(event) => setHub(event.currentTarget.value as keyof typeof HOSTS)} value={hub}>
            <option value="huggingface">Hugging Face</option>
            <option value="modelscope">ModelScope</option>
          </select>
        </label>
        <label>
          Model uid
          <input onInput={(event) => setUid(event.currentTarget.value)} pattern="[A-Za-z0-9][\w.\-]{0,99}" placeholder="named after the repository" value={uid} />
        </label>
      </div>
      <ErrorLine error={launch.error} />
      {launched ? (
        <LaunchProgressView onDone={() => setLaunched(undefined)} uid={launched} />
      ) : (
        <button disabled={launch.busy || !name.trim()} type="submit">
          Launch {name.trim() ? modelName : ''}
        </button>
      )}
    </form>
  )
}
