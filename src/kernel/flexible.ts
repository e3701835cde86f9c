/**
 * The `flexible` model type (Xinference's traditional machine-learning models: an ONNX graph, a scikit-learn
 * estimator, a transformers pipeline). A request is a call: positional `args` and keyword `kwargs`, as Xinference
 * passes them to the model's `infer(*args, **kwargs)`, and the answer is whatever JSON the model gives back.
 */
import type {OperationSpec} from './operations.js'

export interface FlexiblePayload {
  args: unknown[]
  kwargs: Record<string, unknown>
}

/** The model's answer: `result` as a JSON value, or `json`, the answer already written as JSON text, which is sent as it is. */
export type FlexibleResultEvent = {type: 'result'; result: unknown; json?: undefined} | {type: 'result'; json: string; result?: undefined}

export interface FlexibleOperations {
  infer: OperationSpec<FlexiblePayload, FlexibleResultEvent>
}
