/**
 * `servicectl cal-model-mem` for stable-diffusion.cpp: sd.cpp keeps a GGUF's tensors as they are stored, so the
 * weights take about the file's size, read from the hub's metadata or the file on this machine (nothing is
 * downloaded); the service adds the companion files the launch downloads beside it (VAE, text encoders). No KV cache;
 * the compute buffers, which grow with the image size a request asks for, are not estimated, and the answer says so.
 */
import type {MemoryEstimator} from 'service-toolkit'

import {stat} from 'node:fs/promises'

const estimate: MemoryEstimator = async ({files, sizes}) => {
  const bytes = sizes ?? (await Promise.all(files.map(async (file) => (await stat(file)).size)))
  const weights = bytes.reduce((sum, size) => sum + size, 0)
  return {
    context_length: 0,
    kv_cache_bytes: 0,
    not_counted: "stable-diffusion.cpp's compute buffers, which grow with the image size a request asks for",
    overhead_bytes: 0,
    total_bytes: weights,
    weights_bytes: weights,
  }
}

export default estimate
