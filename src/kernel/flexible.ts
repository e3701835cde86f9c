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

export interface FlexibleResultEvent {
  type: 'result'
  /** The model's answer, as JSON. */
  result: unknown
}

export interface FlexibleOperations {
  infer: OperationSpec<FlexiblePayload, FlexibleResultEvent>
}
