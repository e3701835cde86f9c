/** Sampling parameters as the OpenAI API names them; an empty field is left to the service's default. */
export interface Sampling {
  temperature: string
  top_p: string
  max_tokens: string
  stop: string
}

export function samplingBody(sampling: Sampling): Record<string, unknown> {
  const body: Record<string, unknown> = {}
  for (const key of ['temperature', 'top_p', 'max_tokens'] as const) if (sampling[key] !== '') body[key] = Number(sampling[key])
  const stop = sampling.stop
    .split('\n')
    .map((line) => line.replaceAll('\\n', '\n'))
    .filter(Boolean)
  if (stop.length > 0) body.stop = stop
  return body
}

export function SamplingControls({onChange, value}: {value: Sampling; onChange: (value: Sampling) => void}) {
  const field = (key: keyof Sampling, label: string, attributes: Record<string, string>) => (
    <label>
      {label}
      <input onInput={(event) => onChange({...value, [key]: event.currentTarget.value})} type="number" value={value[key]} {...attributes} />
    </label>
  )
  return (
    <fieldset>
      <legend>Sampling</legend>
      {field('temperature', 'Temperature', {max: '2', min: '0', step: '0.1'})}
      {field('top_p', 'Top p', {max: '1', min: '0', step: '0.05'})}
      {field('max_tokens', 'Max tokens', {min: '1', step: '1'})}
      <label>
        Stop sequences (one a line)
        <textarea onInput={(event) => onChange({...value, stop: event.currentTarget.value})} rows={2} value={value.stop} />
      </label>
    </fieldset>
  )
}
