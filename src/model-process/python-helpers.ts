/**
 * The service's Python helpers (python/service_http.py: the HTTP server every engine program needs; service_images.py:
 * the pictures image programs are handed; service_sizes.py: their refusal of a size the model cannot make) ship with the core package, which every plugin requires; the kernel puts
 * their folder on the PYTHONPATH of each engine program it starts (program-spawner.ts), so a plugin's Python server
 * imports them without depending on another plugin.
 */
import {delimiter} from 'node:path'
import {fileURLToPath} from 'node:url'

/** The repository's (or installed package's) python/ folder, beside src/ and dist/. */
export const PYTHON_HELPERS_DIR = fileURLToPath(new URL('../../python', import.meta.url))

/** `PYTHONPATH` with what the engine or the service set first (an engine's own start-up code wins), then the helpers. */
export function pythonPathWithHelpers(pythonPath: string | undefined): string {
  return [pythonPath, PYTHON_HELPERS_DIR].filter(Boolean).join(delimiter)
}
