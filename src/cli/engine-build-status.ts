import type {EngineBuildStatus} from '../protocol/engine-build.js'

/**
 * The line `servicectl engine` prints under its table about an engine's background build, when there is news a
 * person choosing an engine would want: it is building, it failed, or it has finished. Nothing otherwise.
 */
export function buildStatusLine(status: EngineBuildStatus | undefined): string | undefined {
  if (!status) return undefined
  const {binaries, engine, error, percent, stage, state} = status
  if (state === 'building')
    return `${engine} is being built for this machine in the background (${percent === undefined ? stage ?? 'starting' : `${percent}%, ${stage}`}); models launched before it ends use the current binaries.`
  if (state === 'failed') return `${engine}'s background build failed (${error}); \`servicectl engine build ${engine}\` tries again, with its output on the terminal.`
  if (state === 'succeeded') return `${engine} was built for this machine in the background.${binaries ? ` ${binaries}` : ''}`
  return undefined
}
