import {writeFile} from 'node:fs/promises'

/** Writes base64 results as PREFIX-1.EXT, PREFIX-2.EXT, …, and answers the names written. */
export async function writeGenerated(items: string[], prefix: string, extension: string): Promise<string[]> {
  const files = items.map((_, index) => `${prefix}-${index + 1}.${extension}`)
  await Promise.all(items.map((item, index) => writeFile(files[index], Buffer.from(item, 'base64'))))
  return files
}
