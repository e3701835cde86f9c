import type {RunningModel} from '../client/client.js'

import {ClientCommand} from '../cli/base-command.js'

/** Columns per model type, as Xinference prints them; other types fall back to the common ones. */
const COLUMNS: Record<string, Array<[string, keyof RunningModel | string]>> = {
  LLM: [['UID', 'id'], ['Type', 'model_type'], ['Name', 'model_name'], ['Engine', 'model_engine'], ['Format', 'model_format'], ['Size (in billions)', 'model_size_in_billions'], ['Quantization', 'quantization'], ['Status', 'status']],
  embedding: [['UID', 'id'], ['Type', 'model_type'], ['Name', 'model_name'], ['Engine', 'model_engine'], ['Quantization', 'quantization'], ['Dimensions', 'dimensions'], ['Max tokens', 'max_tokens'], ['Status', 'status']],
  rerank: [['UID', 'id'], ['Type', 'model_type'], ['Name', 'model_name'], ['Engine', 'model_engine'], ['Quantization', 'quantization'], ['Max tokens', 'max_tokens'], ['Status', 'status']],
}
const COMMON: Array<[string, string]> = [['UID', 'id'], ['Type', 'model_type'], ['Name', 'model_name'], ['Engine', 'model_engine'], ['Status', 'status']]

export default class List extends ClientCommand<typeof List> {
  static description = 'List running models.'
  static examples = ['<%= config.bin %> list', '<%= config.bin %> list --json']

  async run(): Promise<RunningModel[]> {
    const models = await this.client().list()
    if (models.length === 0) {
      this.log('No models are running. Start one with `servicectl launch`.')
      return models
    }

    // A launch in progress shows where it is: `downloading 42%`, `loading 95%`.
    const status = (m: RunningModel) => (m.status === 'launching' && typeof m.progress === 'number' ? `${m.stage} ${Math.floor(m.progress * 100)}%` : m.status)
    const types = [...new Set(models.map((m) => m.model_type))].sort()
    for (const [index, type] of types.entries()) {
      if (index > 0) this.log('')
      // In a cluster a Worker column says where each model runs; local mode has only the one worker.
      const columns = [...(COLUMNS[type] ?? COMMON), ...(models.some((m) => m.worker !== 'local') ? [['Worker', 'worker'] as [string, string]] : [])]
      this.table(
        columns.map(([header]) => header),
        models.filter((m) => m.model_type === type).map((m) => columns.map(([, field]) => (field === 'status' ? status(m) : m[field]))),
      )
    }

    return models
  }
}
