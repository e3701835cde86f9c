/**
 * A failed program's cause as its caller reads it (issue 32, item 4): the type of a known Python exception or a known
 * native failure, said in the service's words, and never the text of the output around it.
 */
import {expect} from 'chai'

import {recognisedCause} from '../../src/model-process/failure-cause.js'

describe('failure cause', () => {
  it("names a Python exception's type, never its text", () => {
    const traceback = ['Traceback (most recent call last):', '  File "/models/m.py", line 1, in <module>', "ModuleNotFoundError: No module named 'SECRET-VALUE'"]
    expect(recognisedCause(traceback)).to.equal(' (it raised ModuleNotFoundError)')
    expect(recognisedCause(['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'])).to.equal(' (it raised OutOfMemoryError)')
    expect(recognisedCause(['ValueError'])).to.equal(' (it raised ValueError)')
  })

  it('names no type it does not know, as a program could choose one to carry a secret', () => {
    expect(recognisedCause(['HUNTER2Error: whatever'])).to.equal('')
    expect(recognisedCause(['root:x:0:0:root:/root:/bin/bash', 'PATH=/usr/bin'])).to.equal('')
    expect(recognisedCause([])).to.equal('')
  })

  it('recognises native failures by fixed patterns, the last one shown first', () => {
    expect(recognisedCause(['GGML_ASSERT(n_tokens <= n_batch) failed', 'Aborted (core dumped)'])).to.equal(' (a llama.cpp assertion failed)')
    expect(recognisedCause(['OSError: [Errno 98] Address already in use'])).to.equal(' (it raised OSError)')
    expect(recognisedCause(['Error: listen EADDRINUSE: address already in use 127.0.0.1:8000'])).to.equal(' (its port was taken)')
  })
})
