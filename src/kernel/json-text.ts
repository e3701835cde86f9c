/**
 * Where JSON text goes wrong and what is wrong there, said without quoting any of it: the text may hold a password
 * or an API key, and V8's own messages quote it (`Unexpected token 'p', "{"key": p…" is not valid JSON`). The mistake
 * is located with jsonc-parser, VS Code's JSON scanner, which reports each error as a code and an offset.
 */
import {parse, type ParseError, ParseErrorCode} from 'jsonc-parser'

const WHAT: Partial<Record<ParseErrorCode, string>> = {
  [ParseErrorCode.InvalidSymbol]: 'an unexpected character (strings need double quotes; true, false and null are lower case)',
  [ParseErrorCode.InvalidNumberFormat]: 'a malformed number',
  [ParseErrorCode.PropertyNameExpected]: 'a property name in double quotes was expected (no trailing commas)',
  [ParseErrorCode.ValueExpected]: 'a value was expected',
  [ParseErrorCode.ColonExpected]: "':' was expected after a property name",
  [ParseErrorCode.CommaExpected]: "',' was expected between values",
  [ParseErrorCode.CloseBraceExpected]: "'}' was expected",
  [ParseErrorCode.CloseBracketExpected]: "']' was expected",
  [ParseErrorCode.EndOfFileExpected]: 'nothing more was expected after the value',
  [ParseErrorCode.InvalidCommentToken]: 'comments are not allowed in JSON',
  [ParseErrorCode.UnexpectedEndOfComment]: 'comments are not allowed in JSON',
  [ParseErrorCode.UnexpectedEndOfString]: 'a string is not closed on its line (write a line break in a string as \\n)',
  [ParseErrorCode.UnexpectedEndOfNumber]: 'a number ends too early',
  [ParseErrorCode.InvalidUnicode]: 'a \\u escape that is not four hexadecimal digits',
  [ParseErrorCode.InvalidEscapeCharacter]: 'an unknown escape after a backslash',
  [ParseErrorCode.InvalidCharacter]: 'a control character in a string (escape it, e.g. \\n or \\t)',
}

/** Line and column (from 1) of an offset in `text`. */
function position(text: string, offset: number): {line: number; column: number} {
  const before = text.slice(0, offset).split('\n')
  return {column: before.at(-1)!.length + 1, line: before.length}
}

/**
 * What is wrong with JSON text that `JSON.parse` refused, and where: `a value was expected at line 2 column 9`.
 * Nothing of the text itself is in it.
 */
export function describeJsonMistake(text: string): string {
  if (text.trim() === '') return 'it is empty'
  const errors: ParseError[] = []
  parse(text, errors, {allowEmptyContent: false, allowTrailingComma: false, disallowComments: true})
  const [first] = errors
  if (!first) return 'it cannot be parsed'
  const {column, line} = position(text, first.offset)
  const where = first.offset >= text.trimEnd().length ? `at its end (line ${line} column ${column})` : `at line ${line} column ${column}`
  return `${WHAT[first.error] ?? 'it cannot be parsed'} ${where}`
}
