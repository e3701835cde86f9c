/**
 * Launch progress as `GET /v1/models/{uid}/progress` answers it. The modules of src/protocol/ describe the HTTP
 * API for the service and the client library alike, and import nothing, so the client needs no server code.
 */

/**
 * pending → downloading (only when the weights are not cached) or generating (weights made here, on first launch) →
 * loading → ready; or error / cancelled.
 */
export type LaunchStage = 'pending' | 'downloading' | 'generating' | 'loading' | 'ready' | 'error' | 'cancelled'

export interface LaunchProgress {
  model_uid: string
  stage: LaunchStage
  /** The whole launch, from 0 to 1; it never goes back, and reaches 1 when the model is ready. */
  progress: number
  downloaded_bytes: number
  total_bytes: number
  files: Array<{name: string; downloaded_bytes: number; total_bytes: number}>
  hub: string | null
  repo: string | null
  /** Why the launch failed or was cancelled, or why the model's process died after it was ready. */
  error: {message: string; code: string; status: number} | null
}
