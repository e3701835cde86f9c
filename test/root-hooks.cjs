// Mocha's root hooks (.mocharc.json requires this file). After each test file (in a parallel worker) or after the run
// (serial), the browsers test/helpers/browser.ts launched are closed: a connected browser keeps Node's event loop
// alive, so a browser test file run alone would never end. Reached through a global so that files with no browser do
// not load Playwright. Then the folders test/helpers/service.ts's temporaryDirectory made are removed (the file's own
// `after` hooks, which stop its services, have run), so that runs do not pile up homes and models in the temp folder.
const {rm} = require('node:fs/promises')

// Test files run side by side on few cores: an OpenMP thread (sd.cpp, torch) that spins at each barrier while its peer
// waits for a core burns the core another file needs. The stable-diffusion.cpp file beside two busy cores: 112 CPU-s and
// 122 s spinning, 59 CPU-s and 83 s waiting passively. Every service a test starts inherits this; a test that sets the
// policy itself keeps its own. It is set here, not in the helpers, so that the benchmarks, which use the same helpers,
// measure OpenMP's default, as users run it (at one stream on 2 cores llama-server is 8 % slower waiting passively).
process.env.OMP_WAIT_POLICY ??= 'PASSIVE'

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
