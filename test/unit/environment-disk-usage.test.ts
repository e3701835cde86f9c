/**
 * Sizes of environments that share files through hard links, on real files: each one's size alone, the part it
 * shares, and its part of the whole, in which a shared file counts once.
 */
import {expect} from 'chai'
import {link, mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {folderUsages} from '../../src/python-env/disk-usage.js'
import {temporaryDirectory} from '../helpers/service.js'

describe('disk usage of environments that hard-link the same files', () => {
  it('counts a file linked into two environments in both sizes, as shared, and once in the whole', async () => {
    const root = await temporaryDirectory('service-disk-usage-')
    const [first, second, third] = ['py-a', 'py-b', 'py-c'].map((name) => join(root, name))
    for (const folder of [first, second, third]) await mkdir(join(folder, 'lib'), {recursive: true})
    await writeFile(join(first, 'lib', 'torch.so'), Buffer.alloc(1000))
    await link(join(first, 'lib', 'torch.so'), join(second, 'lib', 'torch.so'))
    // A second name in the same environment is still one file.
    await link(join(first, 'lib', 'torch.so'), join(first, 'torch-again.so'))
    await writeFile(join(first, 'own.py'), Buffer.alloc(10))
    await writeFile(join(second, 'own.py'), Buffer.alloc(20))
    await writeFile(join(third, 'alone.py'), Buffer.alloc(300))

    expect(await folderUsages([first, second, third])).to.deep.equal([
      {disk_bytes: 1010, shared_bytes: 1000, size_bytes: 1010},
      {disk_bytes: 20, shared_bytes: 1000, size_bytes: 1020},
      {disk_bytes: 300, shared_bytes: 0, size_bytes: 300},
    ])
    expect(await folderUsages([second])).to.deep.equal([{disk_bytes: 1020, shared_bytes: 0, size_bytes: 1020}])
  })
})
