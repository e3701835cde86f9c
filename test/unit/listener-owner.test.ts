/**
 * Whose socket listens on a port (listener-owner.ts), read from this machine's /proc: a real server in a child process
 * leading its own process group, and one in this test's process.
 */
import {expect} from 'chai'
import {spawn} from 'node:child_process'
import {readFile} from 'node:fs/promises'
import {createServer} from 'node:http'
import {once} from 'node:events'

import {listenerIsInGroup, listeningInodes, processGroupOf} from '../../src/model-process/listener-owner.js'

const TABLE = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 4343 1 0000000000000000 20 4 30 10 -1
   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 100 0 0 10 0
`

describe('listener owner', function () {
  this.timeout(20_000)

  it('reads the listening sockets of a port, not its connections or other ports', () => {
    expect(listeningInodes(TABLE, 8080)).to.deep.equal(['4242'])
    expect(listeningInodes(TABLE, 80)).to.deep.equal(['4444'])
    expect(listeningInodes(TABLE, 81)).to.deep.equal([])
  })

  it('reads the process group from a stat line whose command has spaces and parentheses', () => {
    expect(processGroupOf('1234 (python (x) y) S 1 1200 1200 0 -1 4194560')).to.equal(1200)
  })

  it("tells a program's own listener from another process's", async function () {
    if (!(await readFile('/proc/net/tcp', 'utf8').catch(() => ''))) this.skip()
    const child = spawn(process.execPath, ['-e', "const s = require('node:http').createServer().listen(0, '127.0.0.1', () => console.log(s.address().port))"], {detached: true, stdio: ['ignore', 'pipe', 'inherit']})
    const server = createServer()
    try {
      const [line] = (await once(child.stdout!, 'data')) as [Buffer]
      const childPort = Number(line.toString())
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      const ownPort = (server.address() as {port: number}).port
      expect(await listenerIsInGroup(childPort, child.pid!)).to.equal(true)
      expect(await listenerIsInGroup(ownPort, child.pid!)).to.equal(false)
      server.close()
      await once(server, 'close')
      expect(await listenerIsInGroup(ownPort, child.pid!)).to.equal(undefined)
    } finally {
      child.kill('SIGKILL')
      server.close()
    }
  })
})
