import {Flags} from '@oclif/core'

/** `--auto-build` / `--no-auto-build` of the programs that run models (service-local, service-worker); it overrides SERVICE_AUTO_BUILD. */
export const autoBuildFlag = () =>
  Flags.boolean({
    allowNo: true,
    description:
      "Build engines for this machine in the background at start where it helps and the machine can (llama.cpp: compile its portable build, about 25 minutes on 2 cores, at low priority); --no-auto-build, or SERVICE_AUTO_BUILD=0, turns it off [default: on].",
  })

