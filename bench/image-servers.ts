/**
 * bench/llama-server.ts's two sides run in containers of one image (`--image`, built by `npm run bench:image`: the
 * shipped image plus llama-server, the Containerfile's `bench` stage): `service-local` as the image runs it, and
 * llama-server from the same image, each in its own container with its port published on 127.0.0.1. The folder
 * holding the generated models is mounted at the same path in both, read-only, so a model's path is the same on
 * every side. Podman (CONTAINERS_CONF as the environment gives it), or CONTAINER_ENGINE.
 */
import {execa} from 'execa'
import getPort from 'get-port'
import {chmod} from 'node:fs/promises'

const engine = process.env.CONTAINER_ENGINE || 'podman'
const containers = (args: string[]) => execa(engine, args)

/** Asks `url` until it answers 200, for at most a minute, then says what `name` printed. */
async function healthy(url: string, name: string) {
  for (let attempt = 0; attempt < 600; attempt++) {
    if ((await fetch(url).catch(() => undefined))?.ok) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }

  const logs = await containers(['logs', '--tail', '30', name]).catch((error: Error) => ({stdout: error.message}))
  throw new Error(`${name} did not answer ${url} in 60 s:\n${logs.stdout}`)
}

export interface ImageSide {
  url: string
  stop(): Promise<void>
}

/** Runs a container of `image` with `command`, its port `inside` published on a free port here; removed by stop(). */
async function run(image: string, models: string, name: string, inside: number, command: string[]) {
  const port = await getPort()
  await containers(['run', '--detach', '--name', name, '--publish', `127.0.0.1:${port}:${inside}`, '--volume', `${models}:${models}:ro`, image, ...command])
  return {
    port,
    stop: async () => {
      await containers(['rm', '--force', '--volumes', '--time', '0', name]).catch(() => undefined)
    },
  }
}

/** service-local in a container of `image`; the models under `models` readable by its user (uid 1000). */
export async function startImageService(image: string, models: string): Promise<ImageSide & {binaries(): Promise<string>}> {
  await chmod(models, 0o755)
  const name = `service-bench-${process.pid}`
  const container = await run(image, models, name, 9997, [])
  const url = `http://127.0.0.1:${container.port}`
  try {
    await healthy(`${url}/health`, name)
  } catch (error) {
    await container.stop()
    throw error
  }

  return {
    // What a launch loads in the image, as `servicectl engine build` reports it, less the sentence's full stop.
    binaries: async () => (await containers(['exec', name, 'node', '/opt/service-toolkit/node_modules/@service-toolkit/plugin-engine-llama-cpp/dist/build-report.js'])).stdout.trim().replace(/\.$/, ''),
    stop: container.stop,
    url,
  }
}

/** llama-server in a container of `image`, as bench/llama-server-binary.ts's startLlamaServer starts it here. */
export async function startImageLlamaServer(image: string, models: string, modelPath: string, {contextPerSlot, slots, threads}: {slots: number; contextPerSlot: number; threads: number}): Promise<ImageSide> {
  const name = `service-bench-llama-server-${process.pid}-${slots}`
  const args = ['llama-server', '-m', modelPath, '--host', '0.0.0.0', '--port', '8080', '-t', String(threads), '--parallel', String(slots), '-c', String(slots * contextPerSlot), '--no-webui']
  const container = await run(image, models, name, 8080, args)
  const url = `http://127.0.0.1:${container.port}`
  try {
    await healthy(`${url}/health`, name)
  } catch (error) {
    await container.stop()
    throw error
  }

  return {stop: container.stop, url: `${url}/v1`}
}
