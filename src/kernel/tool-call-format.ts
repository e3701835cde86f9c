/**
 * Which tool-call format a model writes (see tool-calls.ts): the launch's `tool_call_format`, else its family's
 * `tool_parser` (Xinference's field), else the markers its chat template teaches the model, in the family's
 * `chat_template` or the template files beside its weights, so a registered model is recognised as a built-in one is.
 */
import {readFileSync, statSync} from 'node:fs'
import {dirname, join} from 'node:path'

import type {ModelFamily} from './catalogue.js'

import {TOOL_CALL_FORMATS, type ToolCallFormat} from './tool-calls.js'

/** Xinference's `tool_parser` names, and the formats' own. */
const TOOL_PARSERS: Record<string, ToolCallFormat> = {hermes: 'hermes', llama3: 'llama3_json', llama3_json: 'llama3_json', mistral: 'mistral', qwen: 'hermes', qwen25: 'hermes', qwen3: 'hermes'}

/**
 * The format a chat template asks for: Qwen's and Hermes' templates show `<tool_call>`, Mistral's `[TOOL_CALLS]`,
 * Llama 3.1's `<|python_tag|>` and Llama 3.2's describe the JSON (`"parameters": dictionary of argument name …`).
 */
export function toolCallFormatOfTemplate(template: string): ToolCallFormat | undefined {
  if (template.includes('<tool_call>')) return 'hermes'
  if (template.includes('[TOOL_CALLS]')) return 'mistral'
  if (template.includes('<|python_tag|>') || template.includes('dictionary of argument name')) return 'llama3_json'
  return undefined
}

/** Template files larger than this are not read: real ones are kilobytes (a tokenizer_config.json with its vocabulary a few MB). */
const MOST_TEMPLATE_BYTES = 32 * 1024 * 1024

function fileText(path: string): string | undefined {
  try {
    return statSync(path).size <= MOST_TEMPLATE_BYTES ? readFileSync(path, 'utf8') : undefined
  } catch {
    return undefined
  }
}

/** `chat_template` of a tokenizer_config.json or chat_template.json: one template, or a list of named ones. */
function templatesInJson(text: string | undefined): string[] {
  if (!text) return []
  try {
    const template = (JSON.parse(text) as {chat_template?: unknown}).chat_template
    if (typeof template === 'string') return [template]
    return Array.isArray(template) ? template.map((entry) => (entry as {template?: unknown})?.template).filter((entry): entry is string => typeof entry === 'string') : []
  } catch {
    return []
  }
}

/** The chat templates in the folder of a model's weights (`modelPath`: the folder or a file in it); none for a GGUF file. */
export function chatTemplatesBeside(modelPath: string): string[] {
  let folder: string
  try {
    folder = statSync(modelPath).isDirectory() ? modelPath : dirname(modelPath)
  } catch {
    return []
  }

  const jinja = fileText(join(folder, 'chat_template.jinja'))
  return [...(jinja ? [jinja] : []), ...templatesInJson(fileText(join(folder, 'chat_template.json'))), ...templatesInJson(fileText(join(folder, 'tokenizer_config.json')))]
}

/** The launch's choice (`none`: no parsing), the family's parser, or what the templates show; undefined when nothing says. */
export function toolCallFormatOf(request: {family: Pick<ModelFamily, 'chat_template'> & {[field: string]: unknown}; parameters: Record<string, unknown>; modelPath?: string}): ToolCallFormat | undefined {
  const chosen = request.parameters.tool_call_format
  if (chosen === 'none') return undefined
  if (TOOL_CALL_FORMATS.includes(chosen as ToolCallFormat)) return chosen as ToolCallFormat
  const parser = request.family.tool_parser
  if (typeof parser === 'string' && TOOL_PARSERS[parser]) return TOOL_PARSERS[parser]
  const templates = [...(typeof request.family.chat_template === 'string' ? [request.family.chat_template] : []), ...(request.modelPath ? chatTemplatesBeside(request.modelPath) : [])]
  for (const template of templates) {
    const format = toolCallFormatOfTemplate(template)
    if (format) return format
  }

  return undefined
}
