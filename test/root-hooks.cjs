// Mocha's root hooks (.mocharc.json requires this file). After each test file (in a parallel worker) or after the run
// (serial), the browsers test/helpers/browser.ts launched are closed: a connected browser keeps Node's event loop
// alive, so a browser test file run alone would never end. Reached through a global so that files with no browser do
// not load Playwright.
exports.mochaHooks = {
  async afterAll() {
    await globalThis[Symbol.for('service-test.closeBrowsers')]?.()
  },
}
