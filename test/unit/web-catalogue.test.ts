/** The catalogue's labels and filters as the web interface shows them (web/src/catalogue-filters.ts, run here in Node). */
import {expect} from 'chai'

import type {CatalogueEntry} from '../../web/src/catalogue.js'

import {matches, NO_FILTERS, quantizationKey, sizeLabel} from '../../web/src/catalogue-filters.js'

describe('web interface catalogue', () => {
  it('shows a model without a size (an embedding model\'s "none") as a dash, not "none B"', () => {
    expect(sizeLabel('0_5')).to.equal('0.5 B')
    expect(sizeLabel(7)).to.equal('7 B')
    for (const none of ['none', 'None', '', null, undefined]) expect(sizeLabel(none)).to.equal('—')
  })

  it('offers one quantization filter for the ways hubs write the same one, and matches each way', () => {
    expect(['Q4_0', 'q4_0', 'F16', 'fp16', 'f16', 'BF16', 'bf16', 'Q4_K_M', 'q4_k_m', 'IQ2_XS', '4-bit', 'none'].map(quantizationKey)).to.deep.equal([
      'Q4_0', 'Q4_0', 'F16', 'F16', 'F16', 'BF16', 'BF16', 'Q4_K_M', 'Q4_K_M', 'IQ2_XS', '4-bit', 'none',
    ])
    const entry = {abilities: [], engines: [], family: {is_builtin: true, model_name: 'm'}, formats: [], hubs: [], quantizations: ['fp16', 'q4_0'], sizes: []} as unknown as CatalogueEntry
    expect(matches(entry, {...NO_FILTERS, quantization: 'F16'})).to.equal(true)
    expect(matches(entry, {...NO_FILTERS, quantization: 'Q4_0'})).to.equal(true)
    expect(matches(entry, {...NO_FILTERS, quantization: 'Q8_0'})).to.equal(false)
  })
})
