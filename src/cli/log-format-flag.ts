import {Flags} from '@oclif/core'

import {LOG_FORMATS} from '../util/logger.js'

/** `--log-format` of the commands that run a service; it overrides SERVICE_LOG_FORMAT and the config file's `log_format`. */
export const logFormatFlag = Flags.option({
  description: 'Log lines as text, or as one JSON object per line for log collectors (also SERVICE_LOG_FORMAT) [default: text].',
  options: LOG_FORMATS,
})
