/**
 * The lines of a fixed-width table for a terminal. A cell is one line, and none is wider than `maxCellWidth`: one
 * long failure reason would otherwise widen its column, and the rule under the headers, to hundreds of characters.
 * The whole text of every cell is in the command's `--json` output.
 */
export function formatTable(headers: string[], rows: Array<Array<unknown>>, maxCellWidth = 60): string[] {
  const fit = (text: string) => {
    const flat = text.replaceAll(/\s+/g, ' ').trim()
    const characters = [...flat]
    return characters.length > maxCellWidth ? `${characters.slice(0, maxCellWidth - 1).join('')}…` : flat
  }

  const cells = rows.map((row) => row.map((cell) => fit(cell === null || cell === undefined ? '' : Array.isArray(cell) ? cell.join(', ') : String(cell))))
  const width = (text: string) => [...text].length
  const widths = headers.map((header, i) => Math.max(width(header), ...cells.map((row) => width(row[i]))))
  const line = (row: string[]) =>
    row
      .map((cell, i) => cell + ' '.repeat(widths[i] - width(cell)))
      .join('  ')
      .trimEnd()
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map((row) => line(row))]
}
