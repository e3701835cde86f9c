/**
 * Audio playgrounds, through the client library's calls on OpenAI's routes: a transcription of an uploaded or
 * recorded file (`/v1/audio/transcriptions`, `verbose_json` so the page can say how long the audio was), and speech
 * in one of the model's voices (`/v1/audio/speech`) played in the page. Stop, or leaving the page, aborts the request.
 */
import {useEffect, useRef, useState} from 'preact/hooks'

import type {RunningModel} from '../../../src/client/client.js'
import type {Transcription} from '../../../src/client/audio.js'

import {client} from '../api.js'
import {ErrorLine, useLoad} from '../ui.js'
import {SubmitOrStop, useCancellableAction} from './request-controls.js'

/** An object URL for a Blob or MediaSource, revoked when it is replaced or the view goes away. */
export function useObjectUrl() {
  const [url, setUrl] = useState<string | undefined>(undefined)
  useEffect(() => () => url && URL.revokeObjectURL(url), [url])
  return [url, (source: Blob | MediaSource | undefined) => setUrl(source && URL.createObjectURL(source))] as const
}

/**
 * Hands speech to the <audio> element as its bytes arrive: through a MediaSource where the browser takes the format
 * in pieces (mp3 in Chromium and Firefox), so the first sentence plays while the model speaks the rest; otherwise as
 * one file once the last byte is in. What arrived before a Stop stays playable.
 */
async function playAsItArrives(chunks: AsyncIterable<Uint8Array>, type: string, show: (source: Blob | MediaSource) => void): Promise<void> {
  if (typeof MediaSource === 'undefined' || !MediaSource.isTypeSupported(type)) {
    const parts: BlobPart[] = []
    for await (const chunk of chunks) parts.push(chunk as Uint8Array<ArrayBuffer>)
    return show(new Blob(parts, {type}))
  }

  const source = new MediaSource()
  // The source opens once the element it is shown in takes it.
  const opened = new Promise((resolve) => source.addEventListener('sourceopen', resolve, {once: true}))
  show(source)
  await opened
  const buffer = source.addSourceBuffer(type)
  try {
    for await (const chunk of chunks) {
      const appended = new Promise((resolve) => buffer.addEventListener('updateend', resolve, {once: true}))
      buffer.appendBuffer(chunk as Uint8Array<ArrayBuffer>)
      await appended
    }
  } finally {
    if (source.readyState === 'open' && !buffer.updating) source.endOfStream()
  }
}

/** The microphone through MediaRecorder: start asks for it, stop hands over the recording and releases it. */
function useRecorder(onRecorded: (audio: File) => void, onError: (message: string) => void) {
  const recorder = useRef<MediaRecorder | undefined>(undefined)
  const [recording, setRecording] = useState(false)
  const release = () => recorder.current?.stream.getTracks().forEach((track) => track.stop())
  useEffect(() => release, [])
  const start = async () => {
    // Browsers offer the microphone only to secure pages: HTTPS, or the service on this machine (localhost).
    if (!navigator.mediaDevices) return onError('This browser offers the microphone only to pages served over HTTPS or from localhost; upload a file instead.')
    try {
      const stream = await navigator.mediaDevices.getUserMedia({audio: true})
      const chunks: Blob[] = []
      const started = new MediaRecorder(stream)
      started.ondataavailable = (event) => chunks.push(event.data)
      started.onstop = () => {
        const type = started.mimeType || 'audio/webm'
        // The extension tells the service the container (webm in Chromium, ogg or mp4 elsewhere).
        const extension = /ogg/.test(type) ? 'ogg' : /mp4/.test(type) ? 'm4a' : 'webm'
        onRecorded(new File(chunks, `recording.${extension}`, {type}))
        release()
      }
      started.start()
      recorder.current = started
      setRecording(true)
    } catch (failure) {
      onError(`The microphone cannot be used: ${(failure as Error).message}`)
    }
  }

  const stop = () => {
    recorder.current?.stop()
    setRecording(false)
  }

  return {recording, start, stop}
}

export function TranscriptionPlayground({uid}: {uid: string}) {
  const [audio, setAudio] = useState<File | undefined>(undefined)
  const [language, setLanguage] = useState('')
  const [translate, setTranslate] = useState(false)
  const [result, setResult] = useState<Transcription | undefined>(undefined)
  const [recordingUrl, setRecordingUrl] = useObjectUrl()
  const fileInput = useRef<HTMLInputElement>(null)
  const action = useCancellableAction()
  const recorder = useRecorder((recorded) => {
    if (fileInput.current) fileInput.current.value = ''
    setAudio(recorded)
    setRecordingUrl(recorded)
  }, action.setError)

  const submit = (event: Event) => {
    event.preventDefault()
    if (!audio) return action.setError('Choose an audio file or record one first.')
    setResult(undefined)
    void action.run(async (signal) => {
      const options = {fileName: audio.name, language: language || undefined, response_format: 'verbose_json' as const, translate}
      setResult((await client.model(uid).transcribe(audio, options, signal)) as Transcription)
    })
  }

  return (
    <form class="stack" onSubmit={submit}>
      <label>
        Audio file
        <input
          accept="audio/*,video/webm"
          name="file"
          onChange={(event) => {
            setAudio(event.currentTarget.files?.[0])
            setRecordingUrl(undefined)
          }}
          ref={fileInput}
          type="file"
        />
      </label>
      <div class="composer">
        <button class="secondary" onClick={() => (recorder.recording ? recorder.stop() : void recorder.start())} type="button">
          {recorder.recording ? 'Stop recording' : 'Record'}
        </button>
        {recordingUrl && <audio aria-label="Recording" controls src={recordingUrl} />}
      </div>
      <label>
        Language (optional, ISO-639-1)
        <input onInput={(event) => setLanguage(event.currentTarget.value)} placeholder="en" value={language} />
      </label>
      <label class="inline">
        <input checked={translate} onChange={(event) => setTranslate(event.currentTarget.checked)} type="checkbox" />
        Translate to English
      </label>
      <SubmitOrStop action={action} disabled={recorder.recording} label="Transcribe" />
      <ErrorLine error={action.error} />
      {result && (
        <>
          <blockquote aria-label="Transcript" class="output">
            {result.text.trim() || '(no words recognised)'}
          </blockquote>
          <p class="muted" aria-label="Transcript details">
            {result.duration !== undefined && `${result.duration.toFixed(1)} s of audio`}
            {result.language && ` · language ${result.language}`}
            {result.segments && ` · ${result.segments.length} ${result.segments.length === 1 ? 'segment' : 'segments'}`}
          </p>
        </>
      )}
    </form>
  )
}

/** The voices a text2audio model's registration lists; `default` for one that lists none. */
async function voicesOf(model: RunningModel): Promise<string[]> {
  const registration = await client.registration(model.model_type, model.model_name).catch(() => ({}) as Record<string, unknown>)
  return Array.isArray(registration.voices) && registration.voices.length > 0 ? (registration.voices as string[]) : ['default']
}

const SPEECH_FORMATS = ['mp3', 'wav', 'opus', 'flac', 'aac'] as const

export function SpeechPlayground({model}: {model: RunningModel}) {
  const [input, setInput] = useState('Hello from the playground.')
  const voices = useLoad(() => voicesOf(model), [model.id])
  const [voice, setVoice] = useState<string | undefined>(undefined)
  const [format, setFormat] = useState<(typeof SPEECH_FORMATS)[number]>('mp3')
  const [speed, setSpeed] = useState('1')
  const [audio, setAudio] = useObjectUrl()
  const action = useCancellableAction()
  const chosenVoice = voice ?? voices.data?.[0] ?? 'default'
  const submit = (event: Event) => {
    event.preventDefault()
    setAudio(undefined)
    void action.run(async (signal) => {
      const chunks = client.model(model.id).speech(input, {response_format: format, speed: Number(speed), voice: chosenVoice}, signal)
      await playAsItArrives(chunks, format === 'mp3' ? 'audio/mpeg' : `audio/${format}`, setAudio)
    })
  }

  return (
    <form class="stack" onSubmit={submit}>
      <label>
        Text
        <textarea onInput={(event) => setInput(event.currentTarget.value)} required rows={3} value={input} />
      </label>
      <div class="grid">
        <label>
          Voice
          <select onChange={(event) => setVoice(event.currentTarget.value)} value={chosenVoice}>
            {(voices.data ?? [chosenVoice]).map((name) => (
              <option key={name}>{name}</option>
            ))}
          </select>
        </label>
        <label>
          Format
          <select onChange={(event) => setFormat(event.currentTarget.value as typeof format)} value={format}>
            {SPEECH_FORMATS.map((name) => (
              <option key={name}>{name}</option>
            ))}
          </select>
        </label>
        <label>
          Speed
          <input max="4" min="0.25" onInput={(event) => setSpeed(event.currentTarget.value)} step="0.25" type="number" value={speed} />
        </label>
      </div>
      <SubmitOrStop action={action} label="Speak" />
      <ErrorLine error={action.error ?? voices.error} />
      {audio && <audio aria-label="Speech" controls src={audio} />}
    </form>
  )
}
