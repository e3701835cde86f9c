/** The completions, embeddings (similarity of a few texts) and rerank playgrounds. */
import {useEffect, useRef, useState} from 'preact/hooks'

import {client, isAbort, token} from '../api.js'
import {SnippetView} from '../snippet-view.js'
import {type Snippets, snippetsOf} from '../snippets.js'
import {ErrorLine, useAction} from '../ui.js'
import {SamplingControls, type Sampling, samplingBody} from './sampling.js'

const lines = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)

export function CompletionPlayground({uid}: {uid: string}) {
  const [prompt, setPrompt] = useState('Once upon a time')
  const [sampling, setSampling] = useState<Sampling>({max_tokens: '128', stop: '', temperature: '0.7', top_p: '1'})
  const [output, setOutput] = useState('')
  const [snippets, setSnippets] = useState<Snippets | undefined>(undefined)
  const action = useAction()
  const controller = useRef<AbortController | undefined>(undefined)
  // Leaving the playground (another page, tab or model) stops what it still asks the model.
  useEffect(() => () => controller.current?.abort(), [])

  const generate = (event: Event) => {
    event.preventDefault()
    const options = samplingBody(sampling)
    setSnippets(snippetsOf('/v1/completions', {model: uid, prompt, ...options, stream: true}, token.get() !== undefined))
    const abort = (controller.current = new AbortController())
    setOutput('')
    void action
      .run(async () => {
        let text = ''
        try {
          for await (const chunk of client.model(uid).generateStream(prompt, options, abort.signal)) setOutput((text += chunk.choices[0]?.text ?? ''))
        } catch (failure) {
          if (!isAbort(failure)) throw failure
        }
      })
      .finally(() => (controller.current = undefined))
  }

  return (
    <form class="playground" onSubmit={generate}>
      <aside class="settings">
        <SamplingControls onChange={setSampling} value={sampling} />
      </aside>
      <div>
        <label>
          Prompt
          <textarea onInput={(event) => setPrompt(event.currentTarget.value)} rows={4} value={prompt} />
        </label>
        <div class="buttons">
          <button disabled={action.busy} type="submit">
            Generate
          </button>
          {action.busy && (
            <button class="danger" onClick={() => controller.current?.abort()} type="button">
              Stop
            </button>
          )}
        </div>
        <ErrorLine error={action.error} />
        <pre aria-label="Completion" aria-live="polite" class="output">
          <span class="muted">{prompt}</span>
          {output}
        </pre>
        <SnippetView snippets={snippets} />
      </div>
    </form>
  )
}

function cosine(a: number[], b: number[]): number {
  let dot = 0
  let normA = 0
  let normB = 0
  for (let index = 0; index < a.length; index++) {
    dot += a[index] * b[index]
    normA += a[index] ** 2
    normB += b[index] ** 2
  }

  return dot / (Math.sqrt(normA * normB) || 1)
}

export function EmbeddingPlayground({uid}: {uid: string}) {
  const [text, setText] = useState('The cat sits on the mat.\nA kitten rests on a rug.\nStock markets fell today.')
  const [result, setResult] = useState<{texts: string[]; similarity: number[][]; dimensions: number} | undefined>(undefined)
  const [snippets, setSnippets] = useState<Snippets | undefined>(undefined)
  const action = useAction()

  const embed = (event: Event) => {
    event.preventDefault()
    const texts = lines(text)
    setSnippets(snippetsOf('/v1/embeddings', {input: texts, model: uid}, token.get() !== undefined))
    void action.run(async () => {
      const reply = await client.model(uid).createEmbedding(texts)
      const vectors = reply.data.map((item) => item.embedding as number[])
      setResult({dimensions: vectors[0]?.length ?? 0, similarity: vectors.map((a) => vectors.map((b) => cosine(a, b))), texts})
    })
  }

  return (
    <form class="stack" onSubmit={embed}>
      <label>
        Texts (one a line)
        <textarea onInput={(event) => setText(event.currentTarget.value)} rows={5} value={text} />
      </label>
      <button disabled={action.busy} type="submit">
        Compare
      </button>
      <ErrorLine error={action.error} />
      {result && (
        <div class="table-scroll">
          <table aria-label="Cosine similarity">
            <caption>Cosine similarity of {result.dimensions}-dimensional embeddings</caption>
            <thead>
              <tr>
                <th scope="col">text</th>
                {result.texts.map((_, index) => (
                  <th key={index} scope="col">
                    #{index + 1}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {result.texts.map((rowText, row) => (
                <tr key={row}>
                  <th scope="row">
                    #{row + 1} {rowText}
                  </th>
                  {result.similarity[row].map((value, column) => (
                    <td key={column} style={{background: `rgba(46, 125, 50, ${Math.max(0, value) * 0.5})`}}>
                      {value.toFixed(3)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <SnippetView snippets={snippets} />
    </form>
  )
}

export function RerankPlayground({uid}: {uid: string}) {
  const [query, setQuery] = useState('What do cats like?')
  const [documents, setDocuments] = useState('Cats like to sleep in the sun.\nThe stock market closed higher.\nKittens enjoy playing with yarn.')
  const [ranked, setRanked] = useState<Array<{index: number; relevance_score: number; text: string}> | undefined>(undefined)
  const [snippets, setSnippets] = useState<Snippets | undefined>(undefined)
  const action = useAction()

  const rerank = (event: Event) => {
    event.preventDefault()
    const texts = lines(documents)
    setSnippets(snippetsOf('/v1/rerank', {documents: texts, model: uid, query}, token.get() !== undefined))
    void action.run(async () => {
      const reply = await client.model(uid).rerank(texts, query)
      setRanked(reply.results.map((item) => ({index: item.index, relevance_score: item.relevance_score, text: texts[item.index]})))
    })
  }

  return (
    <form class="stack" onSubmit={rerank}>
      <label>
        Query
        <input onInput={(event) => setQuery(event.currentTarget.value)} value={query} />
      </label>
      <label>
        Documents (one a line)
        <textarea onInput={(event) => setDocuments(event.currentTarget.value)} rows={5} value={documents} />
      </label>
      <button disabled={action.busy} type="submit">
        Rerank
      </button>
      <ErrorLine error={action.error} />
      {ranked && (
        <ol aria-label="Ranked documents" class="ranked">
          {ranked.map((item) => (
            <li key={item.index}>
              <strong>{item.relevance_score.toFixed(4)}</strong> #{item.index + 1} {item.text}
            </li>
          ))}
        </ol>
      )}
      <SnippetView snippets={snippets} />
    </form>
  )
}
