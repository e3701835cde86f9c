/**
 * A flexible model's registration in Xinference's format: `model_uri` (a path or `file://` URI of the model), a
 * `launcher` that says how to run it, `launcher_args` for the launcher, and an optional `virtualenv`. The launcher
 * becomes the spec's model format, which is how the kernel finds the engine that runs it (`onnx`: ONNX Runtime).
 */
import type {FamilySpec, KernelApi, ModelFamily} from 'service-toolkit'

import {isAbsolute} from 'node:path'
import {pathToFileURL} from 'node:url'

/** A plain absolute path as Xinference takes it, or a `file://` URI as every other type's registration gives. */
function modelUriOf(uri: string): string {
  return isAbsolute(uri) ? pathToFileURL(uri).href : uri
}

/** Adds the one spec a flexible registration implies; a family that already has specs is kept as it is. */
export function normalizeFlexibleFamily(family: ModelFamily): ModelFamily {
  if (family.model_specs !== undefined || typeof family.model_uri !== 'string' || typeof family.launcher !== 'string') return family
  const spec: FamilySpec = {model_format: family.launcher, model_uri: modelUriOf(family.model_uri)}
  return {...family, model_specs: [spec]}
}

const PUBLIC_NAME = /^[A-Za-z]\w{0,99}$/

const isPlainObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value)

export function validateFlexibleFamily(api: KernelApi, family: ModelFamily): void {
  if (typeof family.launcher !== 'string' || family.launcher.trim() === '')
    throw api.errors.badRequest('launcher is required: how to run the model, such as "onnx" (ONNX Runtime) for a .onnx file.', 'launcher')
  const uri = family.model_uri
  if (typeof uri !== 'string' || uri === '')
    throw api.errors.badRequest('model_uri is required: the absolute path (or file:// URI) of the model on the service\'s machine.', 'model_uri')
  if (!isAbsolute(uri) && !uri.startsWith('file://'))
    throw api.errors.badRequest(`model_uri "${uri}" must be an absolute path or a file:// URI, such as /models/classifier.onnx.`, 'model_uri')
  for (const field of ['launcher_args', 'virtualenv']) {
    if (family[field] !== undefined && family[field] !== null && !isPlainObject(family[field]))
      throw api.errors.badRequest(`${field} must be a JSON object.`, field)
  }

  // The launcher calls this attribute of the module: a public function's name, not a dunder that reaches the module's internals.
  const launcherFunction = (family.launcher_args as {function?: unknown} | undefined)?.function
  if (launcherFunction !== undefined && (typeof launcherFunction !== 'string' || !PUBLIC_NAME.test(launcherFunction)))
    throw api.errors.badRequest('launcher_args.function must be the name of a function of the module, such as "load" (letters, digits and _, not starting with _).', 'launcher_args.function')
}
