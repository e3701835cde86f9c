/**
 * The lines of a fixed-width table for a terminal. A cell is one line, and no column but the last is wider than
 * `maxCellWidth`: one long value would otherwise push every column after it, and the rule under the headers, out by
 * hundreds of characters. The last column is given whole (nothing follows it to push), its rule no longer than the
 * others may be. The whole text of every cell is in the command's `--json` output.
 */
export function formatTable(headers: string[], rows: Array<Array<unknown>>, maxCellWidth = 60): string[] {
  const last = headers.length - 1
  const fit = (text: string, column: number) => {
    const flat = text.replaceAll(/\s+/g, ' ').trim()
    const characters = [...flat]
    return column < last && characters.length > maxCellWidth ? `${characters.slice(0, maxCellWidth - 1).join('')}…` : flat
  }

  const cells = rows.map((row) => row.map((cell, column) => fit(cell === null || cell === undefined ? '' : Array.isArray(cell) ? cell.join(', ') : String(cell), column)))
  const width = (text: string) => [...text].length
  const widths = headers.map((header, i) => Math.max(width(header), ...cells.map((row) => (i === last ? Math.min(width(row[i]), maxCellWidth) : width(row[i])))))
  const line = (row: string[]) =>
    row
      .map((cell, i) => cell + ' '.repeat(Math.max(0, widths[i] - width(cell))))
      .join('  ')
      .trimEnd()
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map((row) => line(row))]
}
