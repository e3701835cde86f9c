/**
 * Register custom models per type: a form checked as the API checks a registration (name, size for LLM, where the
 * weights are), with the JSON it sends beside it (editable: what is sent is the JSON), the custom models of the
 * type, and unregister.
 */
import {useState} from 'preact/hooks'

import {MODEL_UID} from '../../../src/protocol/launch.js'
import {client} from '../api.js'
import {pluginsInfo} from '../catalogue.js'
import {ErrorLine, useAction, useLoad} from '../ui.js'

const LLM_ABILITIES = ['chat', 'generate', 'tools', 'vision', 'reasoning']

interface Fields {
  model_name: string
  model_description: string
  context_length: string
  abilities: string[]
  languages: string
  format: string
  size: string
  quantization: string
  source: 'uri' | 'hub'
  model_uri: string
  model_hub: string
  model_id: string
  file_template: string
}

const EMPTY: Fields = {
  abilities: ['chat'],
  context_length: '4096',
  file_template: '',
  format: 'ggufv2',
  languages: 'en',
  model_description: '',
  model_hub: 'huggingface',
  model_id: '',
  model_name: '',
  model_uri: '',
  quantization: 'q4_k_m',
  size: '',
  source: 'uri',
}

function familyOf(fields: Fields, modelType: string): Record<string, unknown> {
  const llm = modelType === 'LLM'
  const spec = {
    model_format: fields.format,
    ...(llm || fields.size ? {model_size_in_billions: fields.size} : {}),
    quantization: fields.quantization,
    ...(fields.source === 'uri'
      ? {model_uri: fields.model_uri}
      : {model_hub: fields.model_hub, model_id: fields.model_id, ...(fields.file_template ? {model_file_name_template: fields.file_template} : {})}),
  }
  return {
    model_name: fields.model_name,
    ...(fields.model_description ? {model_description: fields.model_description} : {}),
    ...(llm ? {context_length: Number(fields.context_length), model_ability: fields.abilities} : {}),
    model_lang: fields.languages
      .split(',')
      .map((language) => language.trim())
      .filter(Boolean),
    model_specs: [spec],
  }
}

/** The checks the service makes first, with its wording, so most mistakes show before anything is sent. */
function problemsOf(fields: Fields, modelType: string): Partial<Record<keyof Fields, string>> {
  const problems: Partial<Record<keyof Fields, string>> = {}
  if (!MODEL_UID.test(fields.model_name)) problems.model_name = 'model_name must be letters, digits, ".", "_" or "-", starting with a letter or digit.'
  if (modelType === 'LLM' && !fields.size) problems.size = 'model_size_in_billions is required for LLM models (e.g. "0_5" or 7).'
  if (modelType === 'LLM' && !(Number(fields.context_length) > 0)) problems.context_length = 'context_length must be a positive number of tokens.'
  if (fields.source === 'uri' && !/^(file:\/\/|\/)/.test(fields.model_uri)) problems.model_uri = 'model_uri must be a file:// URI or an absolute path on the service\'s machine.'
  if (fields.source === 'hub' && !fields.model_id.includes('/')) problems.model_id = 'model_id must name a repository as owner/name.'
  return problems
}

export function RegisterPage() {
  const plugins = useLoad(pluginsInfo)
  const types = plugins.data?.model_types.map((type) => type.name).sort() ?? []
  const [chosenType, setType] = useState<string | undefined>(undefined)
  const modelType = chosenType ?? (types.includes('LLM') ? 'LLM' : types[0])
  const formats = [...new Set((plugins.data?.engines ?? []).filter((engine) => engine.model_types.includes(modelType ?? '')).flatMap((engine) => engine.formats))]
  const [fields, setFields] = useState<Fields>(EMPTY)
  const [json, setJson] = useState<string | undefined>(undefined)
  const [checked, setChecked] = useState(false)
  const registered = useLoad(async () => (modelType ? (await client.registrations(modelType)).filter((family) => !family.is_builtin) : []), [modelType])
  const action = useAction()
  const [done, setDone] = useState<string | undefined>(undefined)

  const problems = problemsOf(fields, modelType ?? '')
  const shownJson = json ?? JSON.stringify(familyOf(fields, modelType ?? ''), null, 2)
  const set = (key: keyof Fields) => (event: Event) => {
    setFields({...fields, [key]: (event.currentTarget as HTMLInputElement).value})
    setJson(undefined)
  }

  const field = (key: keyof Fields, label: string, attributes: Record<string, unknown> = {}) => (
    <div class="field">
      <label>
        {label}
        <input aria-describedby={checked && problems[key] ? `${key}-problem` : undefined} aria-invalid={checked && problems[key] ? true : undefined} name={key} onInput={set(key)} value={fields[key] as string} {...attributes} />
      </label>
      {checked && problems[key] && (
        <small class="error" id={`${key}-problem`}>
          {problems[key]}
        </small>
      )}
    </div>
  )

  const submit = (event: Event) => {
    event.preventDefault()
    setChecked(true)
    setDone(undefined)
    if (json === undefined && Object.keys(problems).length > 0) return
    void action.run(async () => {
      let family: Record<string, unknown>
      try {
        family = JSON.parse(shownJson) as Record<string, unknown>
      } catch (error) {
        throw new Error(`The JSON is not valid: ${(error as Error).message}`)
      }

      await client.register(modelType!, family)
      setDone(`Registered ${String(family.model_name)} as a ${modelType} model: it is in the catalogue now.`)
      setFields(EMPTY)
      setJson(undefined)
      setChecked(false)
      await registered.reload()
    })
  }

  return (
    <section>
      <h1>Register a custom model</h1>
      <ErrorLine error={plugins.error} />
      <label class="inline">
        Model type
        <select onChange={(event) => setType(event.currentTarget.value)} value={modelType}>
          {types.map((type) => (
            <option key={type}>{type}</option>
          ))}
        </select>
      </label>
      <form aria-label="Registration" class="register" noValidate onSubmit={submit}>
        <fieldset>
          <legend>The model</legend>
          {field('model_name', 'Name', {required: true})}
          {field('model_description', 'Description')}
          {modelType === 'LLM' && field('context_length', 'Context length (tokens)', {min: 1, type: 'number'})}
          {field('languages', 'Languages (comma-separated)')}
          {modelType === 'LLM' && (
            <fieldset class="checkboxes">
              <legend>Abilities</legend>
              {LLM_ABILITIES.map((ability) => (
                <label key={ability}>
                  <input
                    checked={fields.abilities.includes(ability)}
                    onChange={(event) => {
                      setFields({...fields, abilities: event.currentTarget.checked ? [...fields.abilities, ability] : fields.abilities.filter((item) => item !== ability)})
                      setJson(undefined)
                    }}
                    type="checkbox"
                  />
                  {ability}
                </label>
              ))}
            </fieldset>
          )}
        </fieldset>
        <fieldset>
          <legend>Its weights</legend>
          <label>
            Format
            <select onChange={set('format')} value={fields.format}>
              {(formats.length > 0 ? formats : [fields.format]).map((format) => (
                <option key={format}>{format}</option>
              ))}
            </select>
          </label>
          {field('size', modelType === 'LLM' ? 'Size in billions (e.g. 0_5 or 7)' : 'Size in billions (optional)')}
          {field('quantization', 'Quantization')}
          <label>
            Where
            <select onChange={set('source')} value={fields.source}>
              <option value="uri">a file on the service's machine</option>
              <option value="hub">a hub repository</option>
            </select>
          </label>
          {fields.source === 'uri' ? (
            field('model_uri', 'File (file:// URI or absolute path)')
          ) : (
            <>
              <label>
                Hub
                <select onChange={set('model_hub')} value={fields.model_hub}>
                  <option>huggingface</option>
                  <option>modelscope</option>
                </select>
              </label>
              {field('model_id', 'Repository (owner/name)')}
              {field('file_template', 'File name template (e.g. model-{quantization}.gguf)')}
            </>
          )}
        </fieldset>
        <label class="json">
          JSON sent to POST /v1/model_registrations/{modelType}
          <textarea onInput={(event) => setJson(event.currentTarget.value)} rows={18} spellcheck={false} value={shownJson} />
          {json !== undefined && <small>Edited by hand: this JSON is what will be sent. Change a field of the form to start again from the form.</small>}
        </label>
        <ErrorLine error={action.error} />
        {done && (
          <p class="notice" role="status">
            {done}
          </p>
        )}
        <button disabled={action.busy || !modelType} type="submit">
          Register
        </button>
      </form>
      <h2>Custom {modelType} models</h2>
      <ErrorLine error={registered.error} />
      {registered.data?.length === 0 && <p class="muted">None yet.</p>}
      <ul class="registrations">
        {(registered.data ?? []).map((family) => (
          <li key={family.model_name}>
            <code>{family.model_name}</code>{' '}
            <button
              aria-label={`Unregister ${family.model_name}`}
              class="danger"
              onClick={() => void action.run(() => client.unregister(modelType!, family.model_name)).then(() => registered.reload())}
              type="button"
            >
              Unregister
            </button>
          </li>
        ))}
      </ul>
    </section>
  )
}
