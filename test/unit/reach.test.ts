/**
 * What registrations and launches make the service run or read (src/kernel/reach.ts): every field that brings code or
 * names a path is found, and a caller without admin is refused each one, naming the permission and the operator's
 * setting, unless that setting lists it; a setting, once given, bounds admins too.
 */
import {expect} from 'chai'

import type {EngineParameter} from '../../src/kernel/contracts.js'

import {type Authority, checkReach, isPlainRequirement, launchReach, NO_ALLOW_LISTS, type ReachSettings, registrationReach, SERVICE_AUTHORITY} from '../../src/kernel/reach.js'
import {VLLM_PARAMETERS} from '../../plugins/engine-vllm/src/server-command.js'

const registrant: Authority = {admin: false, username: 'registrant'}

const refusal = (run: () => void) => {
  try {
    run()
  } catch (error) {
    return error as {status: number; code: string; message: string; param: string}
  }

  return expect.fail('it was allowed')
}

/** A flexible registration that brings code every way the issue found. */
const PLANTED = {
  launcher: 'python',
  launcher_args: {function: 'pipepager', module: 'pydoc', path: '/srv/models'},
  model_name: 'planted',
  model_specs: [{model_format: 'python', model_src: {huggingface: {model_uri: 'file:///etc'}}, model_uri: 'file:///etc/shadow'}],
  virtualenv: {
    extra_index_url: ['https://evil.example/simple'],
    find_links: '/tmp/wheels',
    index_url: 'http://evil.example/simple',
    packages: ['six==1.17.0', 'evil @ http://evil.example/evil.whl', 'file:///tmp/evil.whl', '/tmp/evil-folder', 'git+https://evil.example/evil.git', 'scikit-learn>=1.5,<2'],
    trusted_host: 'evil.example',
  },
}

describe('reach: what registrations and launches make the service run or read', () => {
  describe('classification', () => {
    it('finds every field of a registration that brings code or names a path, and no plain PyPI requirement', () => {
      expect(registrationReach(PLANTED).map(({field, kind}) => `${kind} ${field}`)).to.deep.equal([
        'python-module launcher_args.module',
        'local-path launcher_args.path',
        'pip-source virtualenv.packages[1]',
        'pip-source virtualenv.packages[2]',
        'pip-source virtualenv.packages[3]',
        'pip-source virtualenv.packages[4]',
        'pip-source virtualenv.index_url',
        'pip-source virtualenv.extra_index_url[0]',
        'pip-source virtualenv.find_links',
        'pip-source virtualenv.trusted_host',
        'local-path model_specs[0].model_uri',
        'local-path model_specs[0].model_src.huggingface.model_uri',
      ])
      expect(registrationReach({model_name: 'hub', model_specs: [{model_format: 'pytorch', model_id: 'org/model'}], virtualenv: {packages: ['transformers==4.46.3']}})).to.deep.equal([])
    })

    it('tells plain requirements (names, extras, versions, markers) from those that name a source of their own', () => {
      for (const plain of ['six', 'six==1.17.0', 'transformers[torch]>=4.40, <5', 'torch ~= 2.5', 'numpy; python_version >= "3.10"', 'a.b_c-d===1.0'])
        expect(isPlainRequirement(plain), plain).to.equal(true)
      for (const sourced of ['evil @ https://evil.example/evil.whl', 'evil@file:///tmp/evil.whl', './evil', '/tmp/evil', 'git+https://evil.example/evil.git', 'https://evil.example/evil.whl', 'six==1 --index-url=http://x', 'x'.repeat(201)])
        expect(isPlainRequirement(sourced), sourced).to.equal(false)
    })

    it("finds a launch's engine parameters that declare what they reach, and Xinference's launch keys", () => {
      const request = {
        chat_template: '/etc/passwd',
        envs: {LD_PRELOAD: '/tmp/evil.so'},
        model_path: '/etc',
        peft_model_config: {lora_list: [{lora_name: 'x', local_path: '/tmp/lora'}]},
        trust_remote_code: true,
        virtual_env_packages: ['six', 'evil @ https://evil.example/evil.whl', {url: 'https://evil.example/evil.whl'}],
      }
      expect(launchReach(request, {parameters: VLLM_PARAMETERS}).map(({field, kind}) => `${kind} ${field}`)).to.deep.equal([
        'local-path chat_template',
        'repository-code trust_remote_code',
        'pip-source virtual_env_packages[1]',
        'pip-source virtual_env_packages[2]',
        'environment envs',
        'local-path model_path',
        'local-path peft_model_config.lora_list[0].local_path',
      ])
      // An inline template is text for the engine's sandboxed Jinja, and trust_remote_code off asks for nothing.
      const harmless = {chat_template: '{{ messages }}', envs: {}, model_path: null, peft_model_config: null, trust_remote_code: false, virtual_env_packages: []}
      expect(launchReach(harmless, {parameters: VLLM_PARAMETERS})).to.deep.equal([])
      const files: Record<string, EngineParameter> = {vae: {description: 'a VAE', reaches: 'file', type: 'string'}}
      expect(launchReach({vae: 'ae.safetensors'}, {parameters: files})).to.deep.equal([{field: 'vae', kind: 'local-path', value: 'ae.safetensors'}])
    })
  })

  describe('the check', () => {
    const items = registrationReach(PLANTED)

    it('refuses a user without admin each field, naming the field, the permission and the setting, with a 403', () => {
      for (const item of items) {
        const error = refusal(() => checkReach([item], registrant, NO_ALLOW_LISTS))
        expect(error, item.field).to.include({code: 'forbidden', param: item.field, status: 403})
        expect(error.message, item.field).to.contain(`${item.field} `).and.to.contain('which needs the admin permission').and.to.contain('user "registrant" does not have it')
      }

      expect(refusal(() => checkReach(items.slice(0, 1), registrant, NO_ALLOW_LISTS)).message).to.equal(
        'launcher_args.module makes the service import and call a Python module, which needs the admin permission, or the module listed in SERVICE_ALLOWED_PYTHON_MODULES by the operator; user "registrant" does not have it. Ask an administrator to register or launch it.',
      )
      const paths = items.filter((item) => item.kind === 'local-path')
      expect(refusal(() => checkReach(paths, registrant, NO_ALLOW_LISTS)).message).to.contain("names a path on the service's machine, which needs the admin permission, or its folder listed in SERVICE_ALLOWED_MODEL_DIRS")
      const launch = launchReach({envs: {PYTHONPATH: '/tmp'}, trust_remote_code: true}, {parameters: VLLM_PARAMETERS})
      for (const item of launch) expect(refusal(() => checkReach([item], registrant, NO_ALLOW_LISTS)).message, item.field).not.to.contain('SERVICE_ALLOWED')
    })

    it('answers a path the same whatever is there: the value alone decides', () => {
      const answer = (uri: string) => refusal(() => checkReach(registrationReach({model_specs: [{model_format: 'pytorch', model_uri: uri}]}), registrant, NO_ALLOW_LISTS))
      const shadow = answer('file:///etc/shadow')
      const missing = answer('file:///etc/no-such-file')
      expect(missing).to.deep.equal(shadow)
    })

    it('lets an admin (every caller when access control is off) name anything while no allow-list is set', () => {
      checkReach([...items, ...launchReach({envs: {A: 'b'}, trust_remote_code: true}, {parameters: VLLM_PARAMETERS})], SERVICE_AUTHORITY, NO_ALLOW_LISTS)
      checkReach(items, {admin: true, username: 'root'}, NO_ALLOW_LISTS)
    })

    it('lets anyone name what an allow-list lists, and no one, admin included, what it does not', () => {
      const settings: ReachSettings = {allowedModelDirs: ['/models'], allowedPipSources: ['https://mirror.example/simple', '/opt/wheels/'], allowedPythonModules: ['my_models']}
      const allowed = registrationReach({
        launcher_args: {module: 'my_models.classifier', path: '/models/code'},
        model_specs: [{model_format: 'python', model_uri: 'file:///models/rows.csv'}],
        virtualenv: {find_links: '/opt/wheels/', index_url: 'https://mirror.example/simple', packages: ['mine @ https://mirror.example/simple/mine/mine-1.0.whl', '/opt/wheels/mine-1.0.whl'], trusted_host: 'mirror.example'},
      })
      checkReach(allowed, registrant, settings)
      for (const authority of [registrant, SERVICE_AUTHORITY]) {
        for (const [module, setting] of [['my_models_evil', 'SERVICE_ALLOWED_PYTHON_MODULES'], ['pydoc', 'SERVICE_ALLOWED_PYTHON_MODULES']]) {
          const error = refusal(() => checkReach(registrationReach({launcher_args: {module}}), authority, settings))
          expect(error).to.include({param: 'launcher_args.module', status: 403})
          expect(error.message).to.contain(`${setting} does not allow it (it allows my_models); ask the operator to add the module there.`)
        }

        for (const source of [{index_url: 'https://mirror.example.evil/simple'}, {packages: ['x @ https://mirror.example/simplex/x.whl']}, {trusted_host: 'evil.example'}, {find_links: '/opt/wheels-evil'}])
          expect(refusal(() => checkReach(registrationReach({virtualenv: source}), authority, settings)).message).to.contain('SERVICE_ALLOWED_PIP_SOURCES does not allow it')
      }
    })

    it('refuses what cannot be a Python module name with a 400, whoever asks', () => {
      for (const module of ['os;import pty', '../evil', '', 'a..b'].filter(Boolean))
        expect(refusal(() => checkReach(registrationReach({launcher_args: {module}}), SERVICE_AUTHORITY, NO_ALLOW_LISTS))).to.include({param: 'launcher_args.module', status: 400})
    })
  })
})
