// Mocha's root hooks (.mocharc.json requires this file). After each test file (in a parallel worker) or after the run
// (serial), the browsers test/helpers/browser.ts launched are closed: a connected browser keeps Node's event loop
// alive, so a browser test file run alone would never end. Reached through a global so that files with no browser do
// not load Playwright. Then the folders test/helpers/service.ts's temporaryDirectory made are removed (the file's own
// `after` hooks, which stop its services, have run), so that runs do not pile up homes and models in the temp folder.
const {rm} = require('node:fs/promises')

exports.mochaHooks = {
  async afterAll() {
    await globalThis[Symbol.for('service-test.closeBrowsers')]?.()
    const folders = globalThis[Symbol.for('service-test.temporaryDirectories')]
    for (const folder of folders ?? []) {
      folders.delete(folder)
      await rm(folder, {force: true, maxRetries: 3, recursive: true}).catch(() => {})
    }
  },
}
