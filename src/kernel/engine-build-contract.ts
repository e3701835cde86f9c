/** What an engine plugin declares about building it for the machine that serves (`EngineDefinition.build`). */

/**
 * A build run on the machine that serves (like `pip install` compiling a wheel): data only, run by `servicectl
 * engine build` with the person's terminal attached, or by the service itself in the background when `auto` says how.
 */
export interface EngineBuild {
  /** What building does and when it helps, in a sentence. */
  description: string
  /** Program and arguments, run as given (no shell). */
  command: string[]
  /** Programs the command needs on PATH; all are checked before it runs, so a missing one is named up front. */
  requires?: BuildRequirement[]
  /**
   * A command that prints, in a line or two, which build the engine now uses; run after a successful build so the
   * person sees it took effect.
   */
  reportCommand?: string[]
  /**
   * The service may run this build by itself, in the background, when it starts on a machine that can build
   * (every requirement on PATH) and the probe says the build would help; see src/service/engine-auto-build.ts.
   */
  auto?: AutomaticBuild
}

export interface AutomaticBuild {
  /**
   * A command that prints one JSON line, `{"wanted": boolean, "reason": "…"}`: whether models launched now would
   * gain from the build (e.g. not when a local build already exists, or a GPU build is in use) and why.
   */
  probeCommand: string[]
  /**
   * The folder the build writes into. The lock that lets one service on the machine build at a time
   * (`service-auto-build.lock`, held by proper-lockfile) and the build's
   * status for the others live there, as every service using this install shares what is built in it.
   */
  folder: string
}

export interface BuildRequirement {
  /** As the message names it: `cmake`, `a C++ compiler`. */
  name: string
  /** Any one of these on PATH satisfies it (a compiler goes by several names). */
  programs: string[]
  /** The Debian and Ubuntu package that provides it, for the `apt install` hint. */
  aptPackage?: string
}
