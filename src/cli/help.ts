import {CommandHelp, Help} from '@oclif/core'

/**
 * `service-local --help` runs `servicectl local --help`, and oclif starts every usage line with
 * `servicectl local`; a command that a program of its own runs (its static `program`) shows its usage as that
 * program is typed instead.
 */
class ProgramCommandHelp extends CommandHelp {
  protected usage(): string {
    const {program, usage} = this.command as typeof this.command & {program?: string}
    if (!program || !usage) return super.usage()
    return [usage].flat().map((line) => this.wrap(`$ ${line}`)).join('\n')
  }
}

export default class ServiceHelp extends Help {
  protected CommandHelpClass = ProgramCommandHelp
}
