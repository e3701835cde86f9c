/**
 * The web interface's audio and image playgrounds against real models, in headless Chromium (test/helpers/browser.ts
 * fails a test on any console error or request to another host): one `service-local` launches tiny-random-whisper
 * (whisper.cpp), tiny-random-vits (the VITS engine) and tiny-random-image (diffusers), the Python ones in the virtual
 * environments cached under ~/.cache/service-test as their own tests make them. The page transcribes an uploaded and
 * a recorded file (Chromium's fake microphone plays the test's WAV), speaks a text the <audio> element plays, makes
 * and edits images the <img> element decodes at the size asked, shows each step of a generation, stops the model's
 * work on Stop or when the page is left, and shows the service's 400 for bad input. With SERVICE_SCREENSHOTS=<folder>
 * it saves the screenshots of these pages in docs/web-ui.md there.
 */
import {expect} from 'chai'
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import type {Page} from 'playwright-core'

import {writeTestAudio} from '../helpers/audio.js'
import {type BrowserSession, checkAndClose, ensureChromium, openBrowser} from '../helpers/browser.js'
import {solidPng} from '../helpers/media.js'
import {TEST_CACHE, uvFromPyPI} from '../helpers/python-tools.js'
import {callApi, closedPort, type RunningService, startService, temporaryDirectory, until} from '../helpers/service.js'

const SCREENSHOTS = process.env.SERVICE_SCREENSHOTS
const SPEECH_STOPS = /speech stopped: the client went away after (\d+) of 60 sentences/

/** Where the model stopped, each time its log says it stopped because the client went away (oldest first). */
async function stopsLogged(service: RunningService, uid: string, pattern: RegExp): Promise<string[]> {
  const log = await readFile(join(service.home, 'logs', 'models', `${uid}.log`), 'utf8').catch(() => '')
  return [...log.matchAll(new RegExp(pattern, 'g'))].map((match) => match[1])
}

/** The <img> elements' decoded sizes, once every one has decoded (decode() rejects for a picture that cannot). */
const decodedSizes = (page: Page) =>
  page.locator('form img').evaluateAll(async (images: HTMLImageElement[]) => Promise.all(images.map(async (image) => (await image.decode(), [image.naturalWidth, image.naturalHeight]))))

describe('web interface playgrounds on real audio and image models (service-local, headless Chromium)', function () {
  this.timeout(120_000)
  let service: RunningService
  let browser: BrowserSession | undefined
  let directory: string
  let speech: string

  const open = async (uid: string, options: Parameters<typeof openBrowser>[1] = {}) => {
    browser = await openBrowser(service.url, options)
    await browser.page.goto(`${service.url}/ui/playground/${uid}`)
    return browser.page
  }

  const shot = async (page: Page, name: string) => SCREENSHOTS && page.screenshot({path: join(SCREENSHOTS, `${name}.png`)})

  before(async function () {
    // A cold run installs the engines' Python packages into the cached environments first: minutes on 2 cores.
    this.timeout(900_000)
    await ensureChromium()
    directory = await temporaryDirectory()
    speech = await writeTestAudio(directory, 'wav', 3)
    const uv = await uvFromPyPI()
    const unreachable = `http://127.0.0.1:${await closedPort()}`
    service = await startService({
      env: {HF_ENDPOINT: unreachable, MODELSCOPE_ENDPOINT: unreachable, PATH: `${uv}:${process.env.PATH}`, SERVICE_VIRTUALENV_DIR: join(TEST_CACHE, 'virtualenv')},
    })
    const launches = [
      {model_engine: 'whisper.cpp', model_name: 'tiny-random-whisper', model_type: 'audio'},
      {model_engine: 'vits', model_name: 'tiny-random-vits', model_type: 'audio'},
      {cpu_threads: 1, model_engine: 'diffusers', model_name: 'tiny-random-image', model_type: 'image'},
    ]
    for (const launched of await Promise.all(launches.map((body) => callApi(service, 'POST', '/v1/models', body)))) expect(launched.status, JSON.stringify(launched.body)).to.equal(200)
  })

  afterEach(async () => {
    const opened = browser
    browser = undefined
    await checkAndClose(opened)
  })

  after(async () => service?.stop())

  it('transcribes an uploaded WAV and shows the transcript the service answered, with the audio\'s length', async () => {
    const page = await open('tiny-random-whisper')
    await page.getByLabel('Audio file').setInputFiles(speech)
    const answered = page.waitForResponse((response) => response.url().endsWith('/v1/audio/transcriptions'))
    await page.getByRole('button', {name: 'Transcribe'}).click()
    const reply = (await (await answered).json()) as {text: string; duration: number}
    expect(reply.duration).to.be.closeTo(3, 0.1)
    const transcript = page.getByLabel('Transcript', {exact: true})
    await transcript.waitFor()
    expect(await transcript.textContent()).to.equal(reply.text.trim() || '(no words recognised)')
    expect(await page.getByLabel('Transcript details').textContent()).to.contain('3.0 s of audio')
    await shot(page, 'transcribe')
  })

  it('records from the microphone (Chromium\'s fake one, playing the test\'s WAV) and transcribes the recording', async () => {
    const fakeMicrophone = ['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-audio-capture=${speech}`]
    const page = await open('tiny-random-whisper', {args: fakeMicrophone})
    await page.getByRole('button', {name: 'Record'}).click()
    await page.getByRole('button', {name: 'Stop recording'}).waitFor()
    // A second of audio to record; what is checked is the recording's length as the service decoded it.
    await page.waitForTimeout(1500)
    await page.getByRole('button', {name: 'Stop recording'}).click()
    const recording = page.getByLabel('Recording')
    await recording.waitFor()
    const sent = page.waitForRequest((request) => request.url().endsWith('/v1/audio/transcriptions'))
    const answered = page.waitForResponse((response) => response.url().endsWith('/v1/audio/transcriptions'))
    await page.getByRole('button', {name: 'Transcribe'}).click()
    expect((await sent).postDataBuffer()!.toString('latin1')).to.match(/name="file"; filename="recording\.webm"\r\nContent-Type: audio\/webm/)
    const reply = (await (await answered).json()) as {duration: number}
    expect(reply.duration).to.be.greaterThan(0.5)
    await page.getByLabel('Transcript', {exact: true}).waitFor()
  })

  it('shows the service\'s 400 for a file that is not audio, naming the field, and keeps working', async () => {
    const page = await open('tiny-random-whisper', {expectedStatuses: [400]})
    await page.getByLabel('Audio file').setInputFiles({buffer: Buffer.from('these are meeting notes, not a recording\n'.repeat(20)), mimeType: 'text/plain', name: 'notes.txt'})
    await page.getByRole('button', {name: 'Transcribe'}).click()
    expect(await page.getByRole('alert').textContent()).to.contain('`file`').and.contain('could not be decoded as audio')
    await page.getByLabel('Audio file').setInputFiles(speech)
    await page.getByRole('button', {name: 'Transcribe'}).click()
    await page.getByLabel('Transcript', {exact: true}).waitFor()
    expect(await page.getByRole('alert').count()).to.equal(0)
  })

  it('speaks a text in a voice of the model, and the <audio> element plays it through', async () => {
    const page = await open('tiny-random-vits', {args: ['--autoplay-policy=no-user-gesture-required']})
    // The voices are the model registration's, loaded when the playground opens.
    await page.getByRole('option', {name: 'second'}).waitFor({state: 'attached'})
    expect(await page.getByRole('combobox', {name: 'Voice'}).locator('option').allTextContents()).to.deep.equal(['default', 'second'])
    await page.getByRole('combobox', {name: 'Voice'}).selectOption('second')
    await page.getByRole('textbox', {name: 'Text'}).fill('Hello from the playground.')
    for (const format of ['mp3', 'wav']) {
      await page.getByRole('combobox', {name: 'Format'}).selectOption(format)
      const sent = page.waitForRequest((request) => request.url().endsWith('/v1/audio/speech'))
      await page.getByRole('button', {name: 'Speak'}).click()
      expect((await sent).postDataJSON()).to.deep.equal({input: 'Hello from the playground.', model: 'tiny-random-vits', response_format: format, speed: 1, voice: 'second'})
      const played = await page.getByLabel('Speech').evaluate(async (audio: HTMLAudioElement) => {
        await new Promise((resolve, reject) => {
          audio.addEventListener('ended', resolve, {once: true})
          audio.addEventListener('error', () => reject(new Error(`the audio element cannot play it: ${audio.error?.message}`)), {once: true})
          audio.play().catch(reject)
        })
        return {duration: audio.duration, played: audio.played.length > 0 ? audio.played.end(audio.played.length - 1) : 0}
      })
      expect(played.duration, format).to.be.greaterThan(0.1).and.lessThan(60)
      expect(played.played, format).to.be.closeTo(played.duration, 0.1)
    }

    await shot(page, 'speak')
  })

  it('plays the first sentences of mp3 speech while the model speaks the rest, and Stop ends it', async () => {
    const page = await open('tiny-random-vits')
    await page.getByRole('textbox', {name: 'Text'}).fill(Array.from({length: 60}, (_, i) => `This is sentence number ${i + 1}.`).join(' '))
    // Whether the request was still running (Stop shown) when the element could first play.
    await page.evaluate(() => {
      const seen = window as unknown as {playableWhileSpeaking?: boolean}
      document.addEventListener('canplay', () => (seen.playableWhileSpeaking ??= document.querySelector('button.danger') !== null), {capture: true})
    })
    const before = (await stopsLogged(service, 'tiny-random-vits', SPEECH_STOPS)).length
    await page.getByRole('button', {name: 'Speak'}).click()
    await page.waitForFunction(() => (window as unknown as {playableWhileSpeaking?: boolean}).playableWhileSpeaking !== undefined)
    expect(await page.evaluate(() => (window as unknown as {playableWhileSpeaking?: boolean}).playableWhileSpeaking)).to.equal(true)
    await page.getByRole('button', {name: 'Stop'}).click()
    const stopped = await until(async () => (await stopsLogged(service, 'tiny-random-vits', SPEECH_STOPS))[before], 'the speech to stop', 60_000)
    expect(Number(stopped)).to.be.lessThan(60)
    // What arrived stays playable.
    expect(await page.getByLabel('Speech').evaluate((audio: HTMLAudioElement) => audio.buffered.length > 0 && audio.buffered.end(0) > 0)).to.equal(true)
  })

  it('stops the speech when the page is left, and the service sees the client go', async () => {
    const page = await open('tiny-random-vits')
    const sentences = Array.from({length: 60}, (_, i) => `This is sentence number ${i + 1}.`).join(' ')
    await page.getByRole('textbox', {name: 'Text'}).fill(sentences)
    const started = page.waitForResponse((response) => response.url().endsWith('/v1/audio/speech'))
    await page.getByRole('button', {name: 'Speak'}).click()
    await started
    const before = (await stopsLogged(service, 'tiny-random-vits', SPEECH_STOPS)).length
    await page.getByRole('link', {name: 'Running models'}).click()
    const stopped = await until(async () => (await stopsLogged(service, 'tiny-random-vits', SPEECH_STOPS))[before], 'the speech to stop', 60_000)
    expect(Number(stopped)).to.be.lessThan(60)
  })

  it('makes an image of the size asked, showing each step done', async () => {
    const page = await open('tiny-random-image')
    await page.getByRole('textbox', {name: 'Prompt'}).fill('a red barn')
    await page.getByRole('combobox', {name: /^Size/}).fill('128x96')
    await page.getByRole('spinbutton', {name: /^Steps/}).fill('3')
    await page.getByRole('spinbutton', {name: 'Seed'}).fill('7')
    const sent = page.waitForRequest((request) => request.url().endsWith('/v1/images/generations'))
    await page.getByRole('button', {name: 'Generate'}).click()
    expect((await sent).postDataJSON()).to.deep.equal({model: 'tiny-random-image', n: 1, prompt: 'a red barn', response_format: 'b64_json', seed: 7, size: '128x96', steps: 3, stream: true})
    await page.getByRole('img').waitFor()
    expect(await decodedSizes(page)).to.deep.equal([[128, 96]])
    expect(await page.getByRole('status', {name: 'Generation progress'}).textContent()).to.equal('Step 3 of 3')
    await shot(page, 'image')
  })

  it('edits an uploaded picture, repaints the part a mask marks and makes variations of it, at the picture\'s size', async () => {
    const page = await open('tiny-random-image', {expectedStatuses: [400]})
    const [picture, mask, wrongMask] = ['picture', 'mask', 'wrong-mask'].map((name) => join(directory, `${name}.png`))
    await writeFile(picture, solidPng(48, 32, [200, 120, 40]))
    await writeFile(mask, solidPng(48, 32, [255, 255, 255]))
    await writeFile(wrongMask, solidPng(32, 32, [255, 255, 255]))
    const cases = [
      {event: 'image_edit', mask: undefined, task: 'Edit a picture'},
      {event: 'image_edit', mask, task: 'Edit a picture'},
      {event: 'image_variation', mask: undefined, task: 'Variations of a picture'},
    ]
    for (const {event, mask: maskFile, task} of cases) {
      await page.getByRole('combobox', {name: 'Make'}).selectOption(task)
      await page.getByLabel('Picture', {exact: true}).setInputFiles(picture)
      if (maskFile) await page.getByLabel(/^Mask/).setInputFiles(maskFile)
      await page.getByRole('textbox', {name: 'Prompt'}).fill('a blue door')
      const request = page.waitForRequest((candidate) => candidate.url().includes('/v1/images/'))
      const answered = page.waitForResponse((response) => response.url().includes('/v1/images/'))
      await page.getByRole('button', {name: 'Generate'}).click()
      expect((await answered).status(), task).to.equal(200)
      // A mask goes as OpenAI's `mask` part; the stream's event names tell which operation ran.
      expect((await request).postDataBuffer()!.toString('latin1').includes('name="mask"; filename="mask.png"'), task).to.equal(maskFile !== undefined)
      expect(await (await answered).text(), task).to.contain(`"type":"${event}.completed"`)
      await page.getByRole('img').waitFor()
      expect(await decodedSizes(page), task).to.deep.equal([[48, 32]])
    }

    await page.getByRole('combobox', {name: 'Make'}).selectOption('Edit a picture')
    await page.getByLabel(/^Mask/).setInputFiles(wrongMask)
    await page.getByRole('button', {name: 'Generate'}).click()
    expect(await page.getByRole('alert').textContent()).to.contain('`mask` is 32x32 but the image is 48x32')
  })

  it('stops a generation on Stop, and when the page is left, at the engine\'s next step', async () => {
    const page = await open('tiny-random-image')
    const stops = /generation stopped at step (\d+) of 500/
    for (const leave of [() => page.getByRole('button', {name: 'Stop'}).click(), () => page.getByRole('link', {name: 'Running models'}).click()]) {
      const before = (await stopsLogged(service, 'tiny-random-image', stops)).length
      await page.getByRole('spinbutton', {name: /^Steps/}).fill('500')
      await page.getByRole('button', {name: 'Generate'}).click()
      await page.getByText(/^Step \d+ of 500$/).waitFor()
      await leave()
      const stopped = await until(async () => (await stopsLogged(service, 'tiny-random-image', stops))[before], 'the generation to stop', 60_000)
      expect(Number(stopped)).to.be.below(500)
      if (page.url().endsWith('/tiny-random-image')) {
        expect(await page.getByRole('status', {name: 'Generation progress'}).textContent()).to.match(/^Stopped at step \d+ of 500$/)
        expect(await page.getByRole('button', {name: 'Generate'}).isEnabled()).to.equal(true)
      }
    }
  })

  it('fits each playground on a phone-sized screen without sideways scrolling', async () => {
    const page = await open('tiny-random-whisper', {viewport: {height: 844, width: 390}})
    for (const uid of ['tiny-random-whisper', 'tiny-random-vits', 'tiny-random-image']) {
      await page.goto(`${service.url}/ui/playground/${uid}`)
      await page.getByRole('button', {name: /^(Transcribe|Speak|Generate)$/}).waitFor()
      expect(await page.evaluate(() => document.documentElement.scrollWidth), uid).to.be.at.most(390)
    }
  })

  it('shows the service\'s 400 for a size the model cannot make, naming the field', async () => {
    const page = await open('tiny-random-image', {expectedStatuses: [400]})
    await page.getByRole('combobox', {name: /^Size/}).fill('33x33')
    await page.getByRole('button', {name: 'Generate'}).click()
    expect(await page.getByRole('alert').textContent()).to.contain('size')
    expect(await page.getByRole('img').count()).to.equal(0)
  })
})
