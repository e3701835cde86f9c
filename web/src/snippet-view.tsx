/** The equivalent code of the last request, in a disclosure with one tab per language. */
import {useState} from 'preact/hooks'

import type {Snippets} from './snippets.js'

import {Tabs} from './ui.js'

const LANGUAGES: Array<[keyof Snippets, string]> = [
  ['curl', 'curl'],
  ['python', 'Python (OpenAI SDK)'],
  ['javascript', 'JavaScript (OpenAI SDK)'],
]

export function SnippetView({snippets}: {snippets?: Snippets}) {
  const [language, setLanguage] = useState<keyof Snippets>('curl')
  if (!snippets) return null
  return (
    <details class="snippet">
      <summary>Code for this request</summary>
      <Tabs label="Language" onChange={(key) => setLanguage(key as keyof Snippets)} options={LANGUAGES} value={language} />
      <pre>
        <code>{snippets[language]}</code>
      </pre>
      <button class="secondary" onClick={() => void navigator.clipboard?.writeText(snippets[language])} type="button">
        Copy
      </button>
    </details>
  )
}
