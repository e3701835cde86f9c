/**
 * The ONNX Runtime session options a model process runs with (and the benchmark's direct side, so both run the
 * engine alike). ONNX Runtime's thread pools spin between runs by default, waiting for the next one: in-process and
 * back to back that saves a wake-up, but a model served over HTTP waits between runs for its request to arrive and
 * its answer to leave, and the spinning threads take the cores the service and its clients need for that (on 2
 * cores, a 1024-wide MLP's run: 2.5-3.2 ms of CPU spinning, 1.1 ms without; see docs/benchmarks.md, Flexible ONNX inference).
 */
import type {InferenceSession} from 'onnxruntime-node'

export function sessionOptions(intraOpThreads?: number): InferenceSession.SessionOptions {
  return {
    ...(intraOpThreads === undefined ? {} : {intraOpNumThreads: intraOpThreads}),
    extra: {session: {inter_op: {allow_spinning: '0'}, intra_op: {allow_spinning: '0'}}},
  }
}
