/**
 * What the image programs say of a size the model cannot make (python/service_sizes.py, shared by the diffusers and
 * stable-diffusion.cpp programs, and the diffusers program's reading of its pipelines' refusals): a 400 naming the
 * field the size came from and sizes the model makes. Run on the machine's python3, which these modules need nothing
 * beyond; the messages are those of diffusers 0.42.1's pipelines.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {delimiter, join} from 'node:path'

import {ROOT} from '../helpers/service.js'

const PROGRAM = `
import json, sys
from pipeline_sizes import pipeline_size_refusal
from service_http import BadRequest
from service_sizes import check_size, size_field


def shown(error):
    return None if error is None else {"message": str(error), "param": error.param}


def checked(width, height, multiple, field):
    try:
        check_size(width, height, multiple, field)
    except BadRequest as error:
        return shown(error)


cases = json.load(sys.stdin)
print(json.dumps({
    "pipeline": [shown(pipeline_size_refusal(ValueError(message), field)) for message, field in cases["pipeline"]],
    "checked": [checked(*case) for case in cases["checked"]],
    "field": [size_field(payload) for payload in cases["field"]],
}))
`

type Refusal = {message: string; param: string} | null

async function run(cases: {pipeline: Array<[string, string]>; checked: Array<[number, number, number, string]>; field: object[]}) {
  const pythonPath = [join(ROOT, 'python'), join(ROOT, 'plugins/engine-diffusers/python')].join(delimiter)
  const {stdout} = await execa('python3', ['-c', PROGRAM], {env: {PYTHONPATH: pythonPath}, input: JSON.stringify(cases)})
  return JSON.parse(stdout) as {pipeline: Refusal[]; checked: Refusal[]; field: string[]}
}

describe('image programs: a size the model cannot make', function () {
  this.timeout(30_000)

  it('names `size` or `kwargs` for a diffusers pipeline\'s size refusal, with its multiple and sizes it makes', async () => {
    const {pipeline} = await run({
      checked: [],
      field: [],
      pipeline: [
        // Wan's check_inputs (tiny-random-video): 40 passes the service's multiples of 8.
        ['`height` and `width` have to be divisible by 16 but are 40 and 40.', 'size'],
        // Stable Diffusion's names the height first.
        ['`height` and `width` have to be divisible by 8 but are 36 and 44.', 'size'],
        ['`height` and `width` have to be divisible by 32 but are 48 and 48.', 'kwargs'],
        ['`height` and `width` have to be divisible by 16 (& positive) but are 24 and 40.', 'size'],
        ['`prompt` has to be of type `str` or `list` but is <class \'int\'>', 'size'],
      ],
    })
    expect(pipeline[0]).to.deep.equal({message: 'this model makes sizes whose sides are multiples of 16 pixels (asked 40x40); try 32x32 or 48x48 as `size`.', param: 'size'})
    expect(pipeline[1]!.message).to.contain('multiples of 8 pixels (asked 44x36); try 40x32 or 48x40 as `size`.')
    expect(pipeline[2]).to.deep.equal({message: 'this model makes sizes whose sides are multiples of 32 pixels (asked 48x48); try 32x32 or 64x64 as the width and height in `kwargs`.', param: 'kwargs'})
    expect(pipeline[3]).to.include({param: 'size'})
    expect(pipeline[3]!.message).to.contain('(asked 40x24); try 32x16 or 48x32')
    expect(pipeline[4]).to.equal(null)
  })

  it('checks a size against a multiple the program knows, as the stable-diffusion.cpp program does for FLUX and SD 3', async () => {
    const {checked, field} = await run({
      checked: [
        [40, 40, 16, 'size'],
        [32, 48, 16, 'size'],
        [8, 8, 16, 'size'],
      ],
      field: [{}, {kwargs: {strength: 0.5}}, {kwargs: {width: 40}}, {kwargs: {height: 40}}],
      pipeline: [],
    })
    expect(checked[0]).to.deep.equal({message: 'this model makes sizes whose sides are multiples of 16 pixels (asked 40x40); try 32x32 or 48x48 as `size`.', param: 'size'})
    expect(checked[1]).to.equal(null)
    expect(checked[2]!.message).to.contain('(asked 8x8); try 16x16 as `size`.')
    expect(field).to.deep.equal(['size', 'size', 'kwargs', 'kwargs'])
  })
})
