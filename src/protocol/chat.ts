/** A piece of a user message: text, or a picture (an http(s) URL or a data URL) for a model with the vision ability. */
export type ChatContentPart = {type: 'text'; text: string} | {type: 'image_url'; image_url: {url: string; detail?: 'auto' | 'low' | 'high'}}

/** A chat message as the client sends it to /v1/chat/completions. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | 'developer'
  content: string | ChatContentPart[]
  [field: string]: unknown
}
