/**
 * The image playground: a picture from a prompt (`/v1/images/generations`), or from an uploaded picture
 * (`/v1/images/edits`, with a mask of the parts to repaint for an inpainting model, `/v1/images/variations`) where the
 * model's abilities allow. Every request asks for
 * `stream`, so the page shows each denoising step as the engine finishes it; Stop, or leaving the page, closes the
 * stream, and the service stops the generation at its next step.
 */
import {useState} from 'preact/hooks'

import type {RunningModel} from '../../../src/client/client.js'

import {client} from '../api.js'
import {ErrorLine} from '../ui.js'
import {SubmitOrStop, useCancellableAction} from './request-controls.js'

/** The stream's events (`image_generation.progress`, `image_edit.completed`, …). */
interface ImageEvent {
  type: string
  step?: number
  steps?: number
  index?: number
  b64_json?: string
  url?: string
}

const TASKS = [
  {ability: 'text2image', label: 'From the prompt', path: '/v1/images/generations', upload: false},
  {ability: 'image2image', label: 'Edit a picture', path: '/v1/images/edits', upload: true},
  {ability: 'image2image', label: 'Variations of a picture', path: '/v1/images/variations', upload: true},
] as const

/** The request's fields, with the empty ones (the model's defaults) left out. */
function fieldsOf(values: Record<string, string>, uid: string) {
  const fields: Record<string, string | number | boolean> = {model: uid, response_format: 'b64_json', stream: true}
  for (const [name, value] of Object.entries(values)) if (value.trim()) fields[name] = ['n', 'seed', 'steps'].includes(name) ? Number(value) : value.trim()
  return fields
}

function formOf(fields: Record<string, string | number | boolean>, files: Record<string, File | undefined>): FormData {
  const form = new FormData()
  for (const [name, value] of Object.entries(fields)) form.append(name, String(value))
  for (const [name, file] of Object.entries(files)) if (file) form.append(name, file, file.name)
  return form
}

export function ImagePlayground({model}: {model: RunningModel}) {
  const tasks = TASKS.filter((task) => model.model_ability.includes(task.ability))
  const [taskLabel, setTaskLabel] = useState<string>(tasks[0].label)
  const task = tasks.find((candidate) => candidate.label === taskLabel) ?? tasks[0]
  const [values, setValues] = useState({n: '1', prompt: 'A lighthouse at dawn, watercolour', seed: '', size: '', steps: ''})
  const [picture, setPicture] = useState<File | undefined>(undefined)
  const [mask, setMask] = useState<File | undefined>(undefined)
  const masked = task.path === '/v1/images/edits' && model.model_ability.includes('inpainting')
  const [progress, setProgress] = useState<{step: number; steps: number; stopped: boolean} | undefined>(undefined)
  const [images, setImages] = useState<string[]>([])
  const action = useCancellableAction()
  const set = (name: keyof typeof values) => (event: Event) => setValues({...values, [name]: (event.currentTarget as HTMLInputElement).value})

  const submit = (event: Event) => {
    event.preventDefault()
    if (task.upload && !picture) return action.setError('Choose a picture to start from.')
    setImages([])
    setProgress(undefined)
    void action.run(async (signal) => {
      const fields = fieldsOf(values, model.id)
      let last = {step: 0, steps: 0}
      try {
        for await (const event of client.stream<ImageEvent>(task.path, task.upload ? formOf(fields, {image: picture, mask: masked ? mask : undefined}) : fields, signal)) {
          if (event.step !== undefined && event.steps !== undefined) setProgress({...(last = {step: event.step, steps: event.steps}), stopped: false})
          const source = event.b64_json ? `data:image/png;base64,${event.b64_json}` : event.url
          if (source) setImages((shown) => [...shown, source])
        }
      } finally {
        if (signal.aborted) setProgress({...last, stopped: true})
      }
    })
  }

  return (
    <form class="stack" onSubmit={submit}>
      {tasks.length > 1 && (
        <label>
          Make
          <select
            onChange={(event) => {
              setTaskLabel(event.currentTarget.value)
              // The mask's file input goes away with the task, so must the file chosen in it.
              setMask(undefined)
            }}
            value={task.label}
          >
            {tasks.map((option) => (
              <option key={option.label}>{option.label}</option>
            ))}
          </select>
        </label>
      )}
      {task.upload && (
        <label>
          Picture
          <input accept="image/png,image/jpeg,image/webp" onChange={(event) => setPicture(event.currentTarget.files?.[0])} type="file" />
        </label>
      )}
      {masked && (
        <label>
          Mask <small>optional: white where the picture is repainted, the picture's size</small>
          <input accept="image/png" onChange={(event) => setMask(event.currentTarget.files?.[0])} type="file" />
        </label>
      )}
      <label>
        Prompt
        <textarea onInput={set('prompt')} required={task.path !== '/v1/images/variations'} rows={3} value={values.prompt} />
      </label>
      <div class="grid">
        <label>
          Size <small>WIDTHxHEIGHT; empty: {task.upload ? "the picture's" : "the model's default"}</small>
          <input list="image-sizes" onInput={set('size')} placeholder={task.upload ? "the picture's" : "the model's default"} value={values.size} />
          <datalist id="image-sizes">
            {['256x256', '512x512', '768x768', '1024x1024'].map((size) => (
              <option key={size} value={size} />
            ))}
          </datalist>
        </label>
        <label>
          Steps <small>empty: the model's default</small>
          <input min="1" onInput={set('steps')} type="number" value={values.steps} />
        </label>
        <label>
          Images
          <input max="10" min="1" onInput={set('n')} type="number" value={values.n} />
        </label>
        <label>
          Seed <small>optional</small>
          <input min="0" onInput={set('seed')} type="number" value={values.seed} />
        </label>
      </div>
      <SubmitOrStop action={action} label="Generate" />
      {progress && (
        <div aria-label="Generation progress" role="status">
          <progress max={progress.steps} value={progress.step} />
          {progress.stopped ? `Stopped at step ${progress.step} of ${progress.steps}` : `Step ${progress.step} of ${progress.steps}`}
        </div>
      )}
      <ErrorLine error={action.error} />
      {images.map((source, index) => (
        <img alt={`Image ${index + 1} for: ${values.prompt}`} key={index} src={source} />
      ))}
    </form>
  )
}
