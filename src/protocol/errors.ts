/**
 * The error bodies every route answers with, as the HTTP edge renders a ServiceError (src/server/app.ts): OpenAI's
 * envelope everywhere but under /anthropic, where Anthropic's clients read theirs.
 */
import {ERROR_CODES} from '../kernel/errors.js'
import * as s from '../kernel/schema.js'

export const openAiErrorSchema = s.object(
  {
    detail: s.optional(s.string({description: "The message again, where Xinference's clients read it (FastAPI's error shape); not in a stream's error event."})),
    error: s.object({
      code: s.string({description: `A stable machine code; the service's own are ${ERROR_CODES.join(', ')}.`}),
      message: s.string({description: 'What went wrong and what to do, written for the person who sent the request.'}),
      param: s.nullable(s.string({description: 'The request field (or query parameter) at fault, as a path such as `messages[1].content`.'})),
      type: s.string({description: 'OpenAI\'s error type for the status: invalid_request_error, authentication_error, permission_error, not_found_error, server_error…'}),
    }),
  },
  {description: "The OpenAI error envelope, and Xinference's `detail`.", title: 'ErrorResponse'},
)

export const anthropicErrorSchema = s.object(
  {
    error: s.object({message: s.string(), type: s.string({description: "Anthropic's error type for the status: invalid_request_error, authentication_error, not_found_error, api_error…"})}),
    type: s.literal('error'),
  },
  {description: "Anthropic's error shape, on Anthropic's routes.", title: 'AnthropicErrorResponse'},
)

export const ollamaErrorSchema = s.object({error: s.string()}, {description: "Ollama's error shape, under /api/.", title: 'OllamaErrorResponse'})
