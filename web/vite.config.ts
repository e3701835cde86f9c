/**
 * Builds the web interface into dist/web, which the service serves at /ui (src/server/web-ui.ts). Preact's JSX
 * is compiled by Vite's own transformer, so no framework plugin is needed.
 */
import {fileURLToPath} from 'node:url'
import {defineConfig} from 'vite'

export default defineConfig({
  base: '/ui/',
  build: {
    emptyOutDir: true,
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    reportCompressedSize: false,
    target: 'es2022',
  },
  oxc: {jsx: {importSource: 'preact', runtime: 'automatic'}},
  root: fileURLToPath(new URL('.', import.meta.url)),
})
