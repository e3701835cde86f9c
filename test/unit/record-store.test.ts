import {expect} from 'chai'
import {readdir, stat, utimes} from 'node:fs/promises'
import {join} from 'node:path'

import {recordStore} from '../../src/kernel/record-store.js'
import {temporaryDirectory} from '../helpers/service.js'

describe('record store (plugins\' records under SERVICE_HOME)', () => {
  it('keeps records as private files and finds them again after a restart', async () => {
    const folder = join(await temporaryDirectory(), 'responses')
    await recordStore(folder, {maxBytes: 1000, maxCount: 10}).put('resp_a', {text: 'kept'})
    expect((await stat(folder)).mode & 0o777).to.equal(0o700)
    expect((await stat(join(folder, 'resp_a.json'))).mode & 0o777).to.equal(0o600)
    const reopened = recordStore(folder, {maxBytes: 1000, maxCount: 10})
    expect(await reopened.get('resp_a')).to.deep.equal({text: 'kept'})
    expect(await reopened.delete('resp_a')).to.equal(true)
    expect(await reopened.get('resp_a')).to.equal(undefined)
    expect(await reopened.delete('resp_a')).to.equal(false)
  })

  it('drops the oldest records past its count or bytes, and refuses one larger than all it holds', async () => {
    for (const folder of [join(await temporaryDirectory(), 'records'), undefined]) {
      const store = recordStore(folder, {maxBytes: 100, maxCount: 3})
      for (const id of ['a', 'b', 'c', 'd']) await store.put(id, id)
      expect(await store.get('a')).to.equal(undefined)
      expect(await store.get('d')).to.equal('d')
      // 92 bytes beside 3 of 3 each: b goes for the count, then c and d for the bytes and the count as e and f come.
      await store.put('big', 'x'.repeat(90))
      expect([await store.get('b'), await store.get('c'), await store.get('d')]).to.deep.equal([undefined, 'c', 'd'])
      await store.put('e', 'e')
      await store.put('f', 'f')
      expect([await store.get('c'), await store.get('d'), await store.get('e')]).to.deep.equal([undefined, undefined, 'e'])
      let refused: unknown
      await store.put('huge', 'x'.repeat(200)).catch((error: unknown) => (refused = error))
      expect(String(refused)).to.contain('more than the 100')
      if (folder) expect((await readdir(folder)).sort()).to.deep.equal(['big.json', 'e.json', 'f.json'])
    }
  })

  it('loads what a previous run left oldest first, and never finds an id that is not plain', async () => {
    const folder = join(await temporaryDirectory(), 'records')
    const first = recordStore(folder, {maxBytes: 1000, maxCount: 2})
    await first.put('newer', 1)
    await first.put('older', 2)
    await utimes(join(folder, 'older.json'), new Date(1000), new Date(1000))
    const second = recordStore(folder, {maxBytes: 1000, maxCount: 2})
    await second.put('third', 3)
    expect(await second.get('older')).to.equal(undefined)
    expect(await second.get('newer')).to.equal(1)
    for (const id of ['../records/newer', 'newer.json', '', 'x'.repeat(129)]) expect(await second.get(id), id).to.equal(undefined)
    let refused: unknown
    await second.put('../escape', 1).catch((error: unknown) => (refused = error))
    expect(String(refused)).to.contain('not plain')
  })
})
