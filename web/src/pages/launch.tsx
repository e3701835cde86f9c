/** Launch: the catalogue of every model type the service lists, searchable and filtered, and the launch form of the chosen model. */
import {useMemo, useState} from 'preact/hooks'

import {type CatalogueEntry, catalogueOf, familiesOf, pluginsInfo} from '../catalogue.js'
import {bySize, type Filters, matches, NO_FILTERS, quantizationKey, sizeLabel} from '../catalogue-filters.js'
import {ErrorLine, Tabs, useLoad} from '../ui.js'
import {EngineBuilds} from './engine-builds.js'
import {HubLaunchForm} from './hub-launch-form.js'
import {LaunchForm} from './launch-form.js'

const FILTERS: Array<{key: keyof Filters; label: string; values: (entry: CatalogueEntry) => string[]; show?: (value: string) => string}> = [
  {key: 'ability', label: 'Ability', values: (entry) => entry.abilities},
  {key: 'engine', label: 'Engine', values: (entry) => entry.engines},
  {key: 'format', label: 'Format', values: (entry) => entry.formats},
  {key: 'size', label: 'Size', show: sizeLabel, values: (entry) => entry.sizes},
  {key: 'quantization', label: 'Quantization', values: (entry) => entry.quantizations.map(quantizationKey)},
]

export function LaunchPage() {
  const plugins = useLoad(pluginsInfo)
  const types = plugins.data?.model_types.map((type) => type.name).sort((a, b) => (a === 'LLM' ? -1 : b === 'LLM' ? 1 : a.localeCompare(b))) ?? []
  const [chosenType, setType] = useState<string | undefined>(undefined)
  // LLM's catalogue is asked for at once, beside the list of types, rather than after it: the first page shows sooner.
  const modelType = chosenType ?? (plugins.data ? types[0] : 'LLM')
  const families = useLoad(async () => (modelType ? familiesOf(modelType) : []), [modelType])
  const [filters, setFilters] = useState<Filters>(NO_FILTERS)
  const [chosen, setChosen] = useState<string | undefined>(undefined)
  const entries = useMemo(() => (modelType && families.data && plugins.data ? catalogueOf(modelType, families.data, plugins.data.engines) : []), [families.data, plugins.data])
  const shown = useMemo(() => entries.filter((entry) => matches(entry, filters)), [entries, filters])
  const selected = entries.find((entry) => entry.family.model_name === chosen)

  return (
    <section>
      <h1>Launch a model</h1>
      <ErrorLine error={plugins.error ?? families.error} />
      <EngineBuilds />
      <Tabs
        label="Model type"
        onChange={(type) => {
          setType(type)
          setChosen(undefined)
          setFilters(NO_FILTERS)
        }}
        options={types.map((type) => [type, type])}
        value={modelType}
      />
      <form class="filters" onSubmit={(event) => event.preventDefault()} role="search">
        <label>
          Search
          <input onInput={(event) => setFilters({...filters, text: event.currentTarget.value})} placeholder="name or description" type="search" value={filters.text} />
        </label>
        {FILTERS.map(({key, label, show, values}) => {
          const options = [...new Set(entries.flatMap(values))].sort(key === 'size' ? bySize : undefined)
          return (
            <label key={key}>
              {label}
              <select onChange={(event) => setFilters({...filters, [key]: event.currentTarget.value})} value={filters[key]}>
                <option value="">any</option>
                {options.map((value) => (
                  <option key={value} value={value}>
                    {show ? show(value) : value}
                  </option>
                ))}
              </select>
            </label>
          )
        })}
      </form>
      <p class="muted">
        {shown.length} of {entries.length} {modelType} models
      </p>
      <div class="catalogue">
        <ul class="cards">
          {shown.map((entry) => (
            <li class={entry.family.model_name === chosen ? 'card chosen' : 'card'} key={entry.family.model_name}>
              <h2>{entry.family.model_name}</h2>
              <p class="tags">
                {entry.abilities.map((ability) => (
                  <span class="tag" key={ability}>
                    {ability}
                  </span>
                ))}
                {!entry.family.is_builtin && <span class="tag custom">custom</span>}
              </p>
              <p class="description">{entry.family.model_description}</p>
              <p class="muted">
                {entry.formats.join(', ')} · {entry.sizes.map(sizeLabel).join(', ')} · {entry.engines.join(', ') || 'no engine installed'}
              </p>
              <button aria-label={`Configure ${entry.family.model_name}`} onClick={() => setChosen(entry.family.model_name)} type="button">
                Configure
              </button>
            </li>
          ))}
        </ul>
        {!selected && (
          <div>
            {modelType === 'LLM' && <HubLaunchForm />}
            <p class="panel muted">Choose a model and press Configure to pick its engine, format, size and quantization, see the memory it needs, and launch it.</p>
          </div>
        )}
        {selected && modelType && plugins.data && <LaunchForm engines={plugins.data.engines} entry={selected} key={`${modelType}/${selected.family.model_name}`} modelType={modelType} />}
      </div>
    </section>
  )
}
