/**
 * The Helm chart (deploy/helm/service-toolkit) rendered offline by the real Helm, linted, and every object it makes
 * validated against the Kubernetes API's schemas (kubernetes-models, generated from Kubernetes' OpenAPI document);
 * scripts/ensure-chart-tools.sh installs both from the npm registry. Then what the objects say: the supervisor's
 * Deployment and Service, workers joining it with -e, volumes for SERVICE_HOME, probes, GPU requests, the cluster
 * token and auth config from Secrets, and the optional Ingress.
 */
import {expect} from 'chai'
import {execa} from 'execa'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'
import {parse, parseAllDocuments, stringify} from 'yaml'

import {readmeBlock} from '../helpers/readme.js'
import {ROOT} from '../helpers/service.js'

const CHART = join(ROOT, 'deploy/helm/service-toolkit')

interface K8sObject {
  apiVersion: string
  kind: string
  metadata: {name: string}
  spec?: any
  stringData?: Record<string, string>
}

/** kubernetes-models' folder (installed outside the repository by scripts/ensure-chart-tools.sh). */
let modelsFolder: string

/** Validates an object against the schema of its apiVersion and kind; throws with the schema's complaint. */
async function validate(object: K8sObject): Promise<void> {
  const file = join(modelsFolder, 'kubernetes-models', object.apiVersion, `${object.kind}.js`)
  const module = (await import(pathToFileURL(file).href)) as Record<string, new (data: unknown) => {validate(): void}>
  new module[object.kind](object).validate()
}

describe('Helm chart: rendered offline by Helm and validated against the Kubernetes schemas', function () {
  this.timeout(120_000)
  let helm: string

  /** Helm with the values given as a values file on its standard input. */
  const helmWith = (args: string[], values: object, options: {reject?: boolean} = {}) =>
    execa(helm, [...args, '--values', '-'], {input: stringify(values), ...options})

  const render = async (values: object = {}) => {
    const {stdout} = await helmWith(['template', 'demo', CHART, '--namespace', 'models'], values)
    return parseAllDocuments(stdout)
      .map((document) => document.toJS() as K8sObject | null)
      .filter((object): object is K8sObject => object !== null)
  }

  const find = (objects: K8sObject[], kind: string, name: string) => {
    const found = objects.find((object) => object.kind === kind && object.metadata.name === name)
    expect(found, `${kind} ${name} among ${objects.map((object) => `${object.kind} ${object.metadata.name}`).join(', ')}`).to.not.equal(undefined)
    return found!
  }

  const FULL = {
    allowedHosts: ['models.internal.example'],
    allowedOrigins: ['https://chat.example.com'],
    auth: {config: '{"auth_config": {}}'},
    clusterToken: {value: 's3cret'},
    env: {SERVICE_MODEL_SRC: 'modelscope'},
    ingress: {enabled: true, host: 'models.example.com'},
    workers: {gpus: 2, replicas: 3},
  }

  before(async () => {
    ;[helm, modelsFolder] = (await execa('bash', [join(ROOT, 'scripts/ensure-chart-tools.sh')])).stdout.trim().split('\n')
  })

  it('passes helm lint --strict, with the defaults and with every option on', async () => {
    await helmWith(['lint', '--strict', CHART], {})
    await helmWith(['lint', '--strict', CHART], FULL)
  })

  it('renders, with the defaults, objects the Kubernetes schemas accept: supervisor Deployment, Service and volume, worker StatefulSet', async () => {
    const objects = await render()
    for (const object of objects) await validate(object)
    expect(objects.map((object) => `${object.kind} ${object.metadata.name}`).sort()).to.deep.equal([
      'Deployment demo-service-toolkit-supervisor',
      'PersistentVolumeClaim demo-service-toolkit-supervisor',
      'Service demo-service-toolkit',
      'Service demo-service-toolkit-worker',
      'StatefulSet demo-service-toolkit-worker',
    ])

    const supervisor = find(objects, 'Deployment', 'demo-service-toolkit-supervisor').spec.template.spec
    expect(supervisor.containers[0].image).to.equal('service-toolkit:0.1.0-cpu')
    expect(supervisor.containers[0].args).to.deep.equal(['service-supervisor', '-H', '0.0.0.0', '-p', '9997', '--log-level', 'info'])
    expect(supervisor.containers[0].readinessProbe.httpGet).to.deep.equal({path: '/health', port: 'http'})
    expect(supervisor.containers[0].livenessProbe.httpGet).to.deep.equal({path: '/health', port: 'http'})
    expect(supervisor.securityContext.runAsNonRoot).to.equal(true)
    expect(supervisor.volumes[0].persistentVolumeClaim.claimName).to.equal('demo-service-toolkit-supervisor')
    // Workers and clients in the cluster call the supervisor by its Service's name, which its Host check must take.
    const variable = (env: Array<{name: string; value?: string}>, name: string) => env.find((entry) => entry.name === name)?.value
    expect(variable(supervisor.containers[0].env, 'SERVICE_ALLOWED_HOSTS')).to.equal(
      'demo-service-toolkit,demo-service-toolkit.models,demo-service-toolkit.models.svc,demo-service-toolkit.models.svc.cluster.local',
    )
    expect(variable(supervisor.containers[0].env, 'SERVICE_ALLOWED_ORIGINS')).to.equal(undefined)

    const worker = find(objects, 'StatefulSet', 'demo-service-toolkit-worker').spec
    const container = worker.template.spec.containers[0]
    expect(container.args.slice(0, 5)).to.deep.equal(['service-worker', '-e', 'http://demo-service-toolkit:9997', '-H', '$(POD_NAME).demo-service-toolkit-worker'])
    expect(container.env.find((variable: {name: string}) => variable.name === 'POD_NAME').valueFrom.fieldRef.fieldPath).to.equal('metadata.name')
    expect(worker.serviceName).to.equal('demo-service-toolkit-worker')
    expect(find(objects, 'Service', 'demo-service-toolkit-worker').spec).to.include({clusterIP: 'None', publishNotReadyAddresses: true})
    expect(container.readinessProbe.exec.command).to.deep.equal(['service-healthcheck'])
    expect(container.resources).to.equal(undefined)
    expect(worker.volumeClaimTemplates[0].spec.resources.requests.storage).to.equal('50Gi')
    expect(find(objects, 'Service', 'demo-service-toolkit').spec.selector).to.deep.equal(find(objects, 'Deployment', 'demo-service-toolkit-supervisor').spec.selector.matchLabels)
  })

  it('with GPUs, a token, auth config and an Ingress: the CUDA image, nvidia.com/gpu limits, Secrets the pods read, and the Ingress to the supervisor', async () => {
    const objects = await render(FULL)
    for (const object of objects) await validate(object)

    const token = find(objects, 'Secret', 'demo-service-toolkit-cluster-token')
    expect(token.stringData).to.deep.equal({token: 's3cret'})
    expect(find(objects, 'Secret', 'demo-service-toolkit-auth-config').stringData).to.deep.equal({'auth-config.json': '{"auth_config": {}}'})

    const supervisor = find(objects, 'Deployment', 'demo-service-toolkit-supervisor').spec.template.spec
    expect(supervisor.containers[0].image).to.equal('service-toolkit:0.1.0')
    expect(supervisor.containers[0].args.slice(-2)).to.deep.equal(['--auth-config', '/etc/service/auth/auth-config.json'])
    expect(supervisor.volumes.find((volume: {name: string}) => volume.name === 'auth').secret.secretName).to.equal('demo-service-toolkit-auth-config')

    const worker = find(objects, 'StatefulSet', 'demo-service-toolkit-worker').spec
    const container = worker.template.spec.containers[0]
    expect(worker.replicas).to.equal(3)
    expect(container.resources.limits).to.deep.equal({'nvidia.com/gpu': 2})
    for (const env of [supervisor.containers[0].env, container.env]) {
      expect(env.find((variable: {name: string}) => variable.name === 'SERVICE_CLUSTER_TOKEN').valueFrom.secretKeyRef).to.deep.equal({key: 'token', name: 'demo-service-toolkit-cluster-token'})
      expect(env.find((variable: {name: string}) => variable.name === 'SERVICE_MODEL_SRC').value).to.equal('modelscope')
    }

    const ingress = find(objects, 'Ingress', 'demo-service-toolkit').spec
    expect(ingress.rules[0].host).to.equal('models.example.com')
    const setting = (name: string) => supervisor.containers[0].env.find((variable: {name: string}) => variable.name === name).value.split(',')
    expect(setting('SERVICE_ALLOWED_HOSTS').slice(4), 'after the Service\'s names, the Ingress host and the chart value').to.deep.equal(['models.example.com', 'models.internal.example'])
    expect(setting('SERVICE_ALLOWED_ORIGINS')).to.deep.equal(['https://chat.example.com'])
    expect(ingress.rules[0].http.paths[0].backend.service).to.deep.equal({name: 'demo-service-toolkit', port: {name: 'http'}})
  })

  it('renders the README\'s values (existing Secrets, GPU workers, an Ingress) into valid objects that use them', async () => {
    const objects = await render(parse(await readmeBlock('helm-values')) as object)
    for (const object of objects) await validate(object)
    expect(objects.filter((object) => object.kind === 'Secret')).to.deep.equal([])
    const supervisor = find(objects, 'Deployment', 'demo-service-toolkit-supervisor').spec.template.spec
    expect(supervisor.containers[0].image).to.equal('registry.example.com/service-toolkit:0.1.0')
    expect(supervisor.volumes.find((volume: {name: string}) => volume.name === 'auth').secret.secretName).to.equal('service-auth-config')
    const worker = find(objects, 'StatefulSet', 'demo-service-toolkit-worker').spec
    expect(worker.template.spec.containers[0].env.find((variable: {name: string}) => variable.name === 'SERVICE_CLUSTER_TOKEN').valueFrom.secretKeyRef.name).to.equal('service-cluster-token')
    expect(worker.volumeClaimTemplates[0].spec.resources.requests.storage).to.equal('100Gi')
    expect(find(objects, 'Ingress', 'demo-service-toolkit').spec.ingressClassName).to.equal('nginx')
  })

  it('refuses auth config without a cluster token, naming the values to set', async () => {
    const result = await helmWith(['template', 'demo', CHART], {auth: {config: '{}'}}, {reject: false})
    expect(result.exitCode).to.not.equal(0)
    expect(result.stderr).to.contain('clusterToken.value or clusterToken.existingSecret')
  })

  it('catches what the Kubernetes schemas forbid in a rendering (a port that is not a number)', async () => {
    const objects = await render({workers: {port: 'http-port'}})
    const worker = find(objects, 'StatefulSet', 'demo-service-toolkit-worker')
    let complaint = ''
    await validate(worker).catch((error: Error) => (complaint = error.message))
    expect(complaint).to.match(/containerPort must be integer/)
  })
})
