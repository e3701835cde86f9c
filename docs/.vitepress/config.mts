import {readFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {defineConfig, type DefaultTheme} from 'vitepress'

import {morePages} from './more-pages.mjs'
import {slugify} from './slugify.mjs'

const docs = join(dirname(fileURLToPath(import.meta.url)), '..')
const {version, repository} = JSON.parse(readFileSync(join(docs, '../package.json'), 'utf8'))
const repositoryUrl = repository.url.replace(/^git\+/, '').replace(/\.git$/, '')

const GROUPS: DefaultTheme.SidebarItem[] = [
  {text: 'Start', items: [
    {text: 'Getting started', link: '/getting-started'},
    {text: 'Catalogue models', link: '/catalogue'},
  ]},
  {text: 'Model types', items: [
    {text: 'LLMs: reasoning, tools, Anthropic, Ollama', link: '/llm'},
    {text: 'Embeddings and rerank', link: '/embeddings-rerank'},
    {text: 'Images and video', link: '/images-video'},
    {text: 'Audio', link: '/audio'},
    {text: 'Flexible models', link: '/flexible'},
  ]},
  {text: 'Engines', items: [
    {text: 'llama.cpp (and building it)', link: '/engine-llama-cpp'},
    {text: 'vLLM, SGLang, MLX', link: '/engine-vllm-sglang-mlx'},
    {text: 'Transformers', link: '/engine-transformers'},
    {text: 'Python virtual environments', link: '/python-environments'},
  ]},
  {text: 'Using the service', items: [
    {text: 'HTTP API', link: '/http-api'},
    {text: 'Xinference client compatibility', link: '/compatibility'},
    {text: 'API reference (/docs, /openapi.json)', link: '/api-reference'},
    {text: 'Command-line tool', link: '/cli'},
    {text: 'Command-line reference', link: '/cli-reference'},
    {text: 'Web interface', link: '/web-ui'},
  ]},
  {text: 'Running it', items: [
    {text: 'Access control', link: '/access-control'},
    {text: 'Cluster', link: '/cluster'},
    {text: 'Deployment', link: '/deployment'},
    {text: 'Observability', link: '/observability'},
    {text: 'Configuration', link: '/configuration'},
  ]},
  {text: 'Inside', items: [
    {text: 'Writing a plugin', link: '/plugins'},
    {text: 'Architecture', link: '/architecture'},
    {text: 'Performance', link: '/benchmarks'},
    {text: 'About these docs', link: '/contributing'},
  ]},
]

const more = morePages(docs, new Set(GROUPS.flatMap((group) => group.items!.map((item) => `${item.link!.slice(1)}.md`))))

export default defineConfig({
  title: 'service-toolkit',
  description: 'Run machine-learning models on one machine or a cluster behind OpenAI- and Anthropic-compatible APIs',
  lastUpdated: false,
  markdown: {anchor: {slugify}},
  themeConfig: {
    search: {provider: 'local'},
    nav: [
      {text: 'Getting started', link: '/getting-started'},
      {text: 'HTTP API', link: '/http-api'},
      {text: 'CLI', link: '/cli-reference'},
      {text: 'Configuration', link: '/configuration'},
      // VitePress has no version switcher; the site is built from one checkout, and this says which version it is.
      {text: `v${version}`, items: [
        {text: `service-toolkit ${version} (this site)`, link: '/contributing#versions'},
        {text: 'npm package', link: 'https://www.npmjs.com/package/service-toolkit'},
        {text: 'Source', link: repositoryUrl},
      ]},
    ],
    sidebar: more.length > 0 ? [...GROUPS, {text: 'More', items: more}] : GROUPS,
    outline: {level: [2, 3]},
    socialLinks: [{icon: 'github', link: repositoryUrl}],
  },
})
