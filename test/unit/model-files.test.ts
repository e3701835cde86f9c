/** What a `file://` model_uri may point at, checked on real files of every kind (pipes, sockets, devices, /proc). */
import {expect} from 'chai'
import {execFileSync} from 'node:child_process'
import {mkdir, symlink, writeFile} from 'node:fs/promises'
import {createServer, type Server} from 'node:net'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {checkModelUri} from '../../src/kernel/model-files.js'
import {temporaryDirectory} from '../helpers/service.js'

const GGUF_HEADER = Buffer.concat([Buffer.from('GGUF'), Buffer.from([3, 0, 0, 0]), Buffer.alloc(16)])

describe('model files', () => {
  let directory: string
  let socket: Server
  const uri = (path: string) => pathToFileURL(path).href
  const refusal = async (path: string, options: {format?: string; allowedDirs?: string[]} = {}) =>
    checkModelUri(uri(path), {format: 'ggufv2', param: 'model_specs[0].model_uri', ...options}).then(
      () => expect.fail(`${path} was accepted`),
      (error) => error,
    )

  before(async () => {
    directory = await temporaryDirectory()
    await writeFile(join(directory, 'model.gguf'), GGUF_HEADER)
    await writeFile(join(directory, 'passwd'), 'root:x:0:0:root:/root:/bin/bash\n')
    await writeFile(join(directory, 'empty.gguf'), '')
    await mkdir(join(directory, 'folder'))
    await symlink(join(directory, 'model.gguf'), join(directory, 'link.gguf'))
    await symlink(join(directory, 'passwd'), join(directory, 'link-to-text.gguf'))
    execFileSync('mkfifo', [join(directory, 'pipe.gguf')])
    socket = createServer()
    await new Promise<void>((resolve) => socket.listen(join(directory, 'socket.gguf'), resolve))
  })

  after(() => socket?.close())

  it('accepts a GGUF file, directly or through a symlink, and answers the real path', async () => {
    const check = {format: 'ggufv2', param: 'model_uri'}
    expect(await checkModelUri(uri(join(directory, 'model.gguf')), check)).to.match(/model\.gguf$/)
    expect(await checkModelUri(uri(join(directory, 'link.gguf')), check)).to.match(/model\.gguf$/)
  })

  it('accepts a folder or any regular file for a format that is not GGUF', async () => {
    expect(await checkModelUri(uri(join(directory, 'folder')), {format: 'pytorch', param: 'model_uri'})).to.match(/folder$/)
    expect(await checkModelUri(uri(join(directory, 'passwd')), {format: 'pytorch', param: 'model_uri'})).to.match(/passwd$/)
  })

  it('gives every unusable path the same answer, naming the field and quoting none of the file', async () => {
    const paths = [
      join(directory, 'passwd'),
      join(directory, 'link-to-text.gguf'),
      join(directory, 'no-such-file.gguf'),
      join(directory, 'empty.gguf'),
      join(directory, 'folder'),
      join(directory, 'pipe.gguf'),
      join(directory, 'socket.gguf'),
      '/dev/null',
      '/dev/zero',
      '/proc/self/environ',
      '/sys/kernel/notes',
      '/etc/passwd',
    ]
    for (const path of paths) {
      const error = await refusal(path)
      expect(error, path).to.include({param: 'model_specs[0].model_uri', status: 400})
      expect(error.message.replace(uri(path), 'URI'), path).to.equal(
        "model_specs[0].model_uri (URI) cannot be used: it must be an existing, readable GGUF file (model_format ggufv2) on the service's machine, not a pipe, device, socket or kernel pseudo-file.",
      )
      expect(error.message).not.to.contain('root:')
    }

    expect((await refusal('/proc/self', {format: 'pytorch'})).status).to.equal(400)
  })

  it('refuses what is not a file:// URI without quoting it', async () => {
    for (const bad of ['/data/weights.gguf', 'https://example.com/weights.gguf', 'file://host/weights.gguf']) {
      const error = await checkModelUri(bad, {format: 'ggufv2', param: 'model_uri'}).catch((error_) => error_)
      expect(error, bad).to.include({param: 'model_uri', status: 400})
      expect(error.message, bad).not.to.contain(bad)
    }
  })

  it('confines files to the allowed folders by where they resolve, naming the setting', async () => {
    const allowed = join(directory, 'allowed')
    await mkdir(allowed)
    await writeFile(join(allowed, 'inside.gguf'), GGUF_HEADER)
    await symlink(join(directory, 'model.gguf'), join(allowed, 'escape.gguf'))
    await symlink(join(allowed, 'inside.gguf'), join(directory, 'into.gguf'))
    const allowedDirs = [allowed]
    expect(await checkModelUri(uri(join(allowed, 'inside.gguf')), {allowedDirs, format: 'ggufv2', param: 'model_uri'})).to.match(/inside\.gguf$/)
    for (const path of [join(directory, 'model.gguf'), join(allowed, 'escape.gguf'), join(directory, 'into.gguf'), `${allowed}/../model.gguf`, '/etc/passwd']) {
      const error = await refusal(path, {allowedDirs})
      expect(error.message, path).to.contain(`is outside the folders SERVICE_ALLOWED_MODEL_DIRS allows (${allowed})`)
    }
  })
})
