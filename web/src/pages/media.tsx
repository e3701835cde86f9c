/**
 * Audio and image playgrounds, built on OpenAI's request and response shapes (`/v1/audio/transcriptions`,
 * `/v1/audio/speech`, `/v1/images/generations`): the playground page offers them to models with the matching ability.
 */
import {useEffect, useState} from 'preact/hooks'

import {callRaw} from '../api.js'
import {ErrorLine, useAction} from '../ui.js'

/** An object URL for a Blob, revoked when it is replaced or the view goes away. */
function useObjectUrl() {
  const [url, setUrl] = useState<string | undefined>(undefined)
  useEffect(() => () => url && URL.revokeObjectURL(url), [url])
  return [url, (blob: Blob) => setUrl(URL.createObjectURL(blob))] as const
}

export function TranscriptionPlayground({uid}: {uid: string}) {
  const [text, setText] = useState<string | undefined>(undefined)
  const action = useAction()
  const submit = (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    form.set('model', uid)
    void action.run(async () => {
      const reply = (await (await callRaw('/v1/audio/transcriptions', {body: form, method: 'POST'})).json()) as {text: string}
      setText(reply.text)
    })
  }

  return (
    <form class="stack" onSubmit={submit}>
      <label>
        Audio file
        <input accept="audio/*" name="file" required type="file" />
      </label>
      <label>
        Language (optional, ISO-639-1)
        <input name="language" placeholder="en" />
      </label>
      <button disabled={action.busy} type="submit">
        Transcribe
      </button>
      <ErrorLine error={action.error} />
      {text !== undefined && (
        <blockquote aria-label="Transcript" class="output">
          {text}
        </blockquote>
      )}
    </form>
  )
}

export function SpeechPlayground({uid}: {uid: string}) {
  const [input, setInput] = useState('Hello from the playground.')
  const [voice, setVoice] = useState('')
  const [audio, setAudio] = useObjectUrl()
  const action = useAction()
  const submit = (event: Event) => {
    event.preventDefault()
    void action.run(async () => {
      const response = await callRaw('/v1/audio/speech', {
        body: JSON.stringify({input, model: uid, response_format: 'mp3', ...(voice ? {voice} : {})}),
        headers: {'content-type': 'application/json'},
        method: 'POST',
      })
      setAudio(await response.blob())
    })
  }

  return (
    <form class="stack" onSubmit={submit}>
      <label>
        Text
        <textarea onInput={(event) => setInput(event.currentTarget.value)} required rows={3} value={input} />
      </label>
      <label>
        Voice (optional)
        <input onInput={(event) => setVoice(event.currentTarget.value)} value={voice} />
      </label>
      <button disabled={action.busy} type="submit">
        Speak
      </button>
      <ErrorLine error={action.error} />
      {audio && <audio aria-label="Speech" controls src={audio} />}
    </form>
  )
}

export function ImagePlayground({uid}: {uid: string}) {
  const [prompt, setPrompt] = useState('A lighthouse at dawn, watercolour')
  const [size, setSize] = useState('512x512')
  const [images, setImages] = useState<string[]>([])
  const action = useAction()
  const submit = (event: Event) => {
    event.preventDefault()
    void action.run(async () => {
      const response = await callRaw('/v1/images/generations', {
        body: JSON.stringify({model: uid, n: 1, prompt, response_format: 'b64_json', size}),
        headers: {'content-type': 'application/json'},
        method: 'POST',
      })
      const reply = (await response.json()) as {data: Array<{b64_json?: string; url?: string}>}
      setImages(reply.data.map((image) => (image.b64_json ? `data:image/png;base64,${image.b64_json}` : (image.url ?? ''))).filter(Boolean))
    })
  }

  return (
    <form class="stack" onSubmit={submit}>
      <label>
        Prompt
        <textarea onInput={(event) => setPrompt(event.currentTarget.value)} required rows={3} value={prompt} />
      </label>
      <label>
        Size
        <select onChange={(event) => setSize(event.currentTarget.value)} value={size}>
          {['256x256', '512x512', '768x768', '1024x1024'].map((option) => (
            <option key={option}>{option}</option>
          ))}
        </select>
      </label>
      <button disabled={action.busy} type="submit">
        Generate
      </button>
      <ErrorLine error={action.error} />
      {images.map((source, index) => (
        <img alt={`Generated for: ${prompt}`} key={index} src={source} />
      ))}
    </form>
  )
}
