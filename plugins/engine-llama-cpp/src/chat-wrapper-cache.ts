/**
 * node-llama-cpp's resolveChatWrapper matches a GGUF's Jinja chat template to its specialized wrappers by rendering it
 * against test chats: about 190 ms of CPU on 2 cores for tiny-random-llm's ChatML template, spent on a model process's
 * first chat. Its answer depends only on the model file, the wrapper settings and node-llama-cpp's version, so the
 * engine keeps it in its cache folder (LoadContext.cacheDir), and later loads of the same file make the wrapper by name.
 * Only answers a name rebuilds exactly are kept: the template itself (`jinjaTemplate`), or a specialized wrapper whose
 * class tests no option configurations against the template, so that it takes the launch's settings alone, as
 * resolveChatWrapper gives them. Any other answer is resolved again at each load.
 */
import type {ChatWrapper, LlamaModel, ResolveChatWrapperOptions, ResolveChatWrapperWithModelOptions} from 'node-llama-cpp'

import {createHash} from 'node:crypto'
import {mkdir, readFile, rename, stat, writeFile} from 'node:fs/promises'
import {dirname, join} from 'node:path'

export type WrapperSettings = ResolveChatWrapperWithModelOptions['customWrapperSettings']
type WrapperName = NonNullable<ResolveChatWrapperOptions['type']>

/** A wrapper class's option configurations, when it tests some before it supersedes a template (node-llama-cpp internal). */
type Configurable = {_getOptionConfigurationsToTestIfCanSupersedeJinjaTemplate?(): unknown[]}

const empty = (value: unknown) => value === undefined || (typeof value === 'object' && value !== null && Object.keys(value).length === 0)
/** A configuration is `{}` or `[test, apply, jinja options]`; empty when each part is. */
const emptyConfiguration = (configuration: unknown) => (Array.isArray(configuration) ? configuration.every(empty) : empty(configuration))

/**
 * Resolves the model's chat wrapper for given settings as resolveChatWrapper does, taking the answer from `cacheDir`
 * when a load of the same file kept it there. Reading happens here; resolving, when it must, on the first call of the
 * answered function, which is synchronous like resolveChatWrapper.
 */
export async function chatWrapperResolver(model: LlamaModel, modelPath: string, cacheDir: string | undefined, settings: WrapperSettings[]): Promise<(settings: WrapperSettings) => ChatWrapper> {
  const {chatWrappers, getModuleVersion, JinjaTemplateChatWrapper, resolveChatWrapper, specializedChatWrapperTypeNames} = await import('node-llama-cpp')
  const resolveFully = (customWrapperSettings: WrapperSettings) => resolveChatWrapper(model, {customWrapperSettings})
  if (!cacheDir) return resolveFully
  const file = await stat(modelPath).catch(() => undefined)
  if (!file) return resolveFully
  const version = await getModuleVersion()
  const entryOf = (customWrapperSettings: WrapperSettings) => {
    const key = createHash('sha256').update(JSON.stringify({file: modelPath, mtimeMs: file.mtimeMs, settings: customWrapperSettings ?? null, size: file.size, version})).digest('hex')
    return join(cacheDir, 'chat-wrappers', `${key}.json`)
  }

  const kept = new Map<string, WrapperName>()
  for (const entry of settings.map(entryOf)) {
    const name = await readFile(entry, 'utf8').then((text) => (JSON.parse(text) as {type?: WrapperName}).type, () => undefined)
    if (name) kept.set(entry, name)
  }

  /** The name that rebuilds `wrapper` with the settings alone, if there is one. */
  const nameOf = (wrapper: ChatWrapper): WrapperName | undefined => {
    if (wrapper instanceof JinjaTemplateChatWrapper) return 'jinjaTemplate'
    const name = specializedChatWrapperTypeNames.find((candidate) => chatWrappers[candidate] === wrapper.constructor)
    const configurations = (wrapper.constructor as Configurable)._getOptionConfigurationsToTestIfCanSupersedeJinjaTemplate?.()
    return name && configurations?.every(emptyConfiguration) ? name : undefined
  }

  return (customWrapperSettings) => {
    const entry = entryOf(customWrapperSettings)
    const name = kept.get(entry)
    if (name) return resolveChatWrapper(model, {customWrapperSettings, type: name})
    const wrapper = resolveFully(customWrapperSettings)
    const found = nameOf(wrapper)
    if (found) void keep(entry, found)
    return wrapper
  }
}

/** Written whole or not at all, readable by the service's user alone; a failure only costs the next load the resolving. */
async function keep(entry: string, type: WrapperName): Promise<void> {
  const partial = `${entry}.${process.pid}.partial`
  try {
    await mkdir(dirname(entry), {mode: 0o700, recursive: true})
    await writeFile(partial, JSON.stringify({type}), {mode: 0o600})
    await rename(partial, entry)
  } catch {
    // A read-only home: resolved again next time.
  }
}
