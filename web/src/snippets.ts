/** The request a playground just made, as the `curl` command and OpenAI SDK code that make the same call. */
export interface Snippets {
  curl: string
  python: string
  javascript: string
}

const pythonValue = (value: unknown): string => JSON.stringify(value, null, 4).replaceAll(': true', ': True').replaceAll(': false', ': False').replaceAll(': null', ': None')

export function snippetsOf(path: '/v1/chat/completions' | '/v1/completions' | '/v1/embeddings' | '/v1/rerank', body: Record<string, unknown>, withToken: boolean): Snippets {
  const base = `${location.origin}/v1`
  const auth = withToken ? ` \\\n  -H "Authorization: Bearer $SERVICE_API_KEY"` : ''
  const key = withToken ? 'os.environ["SERVICE_API_KEY"]' : '"not-needed"'
  const jsKey = withToken ? 'process.env.SERVICE_API_KEY' : "'not-needed'"
  const curl = `curl ${location.origin}${path} \\\n  -H "Content-Type: application/json"${auth} \\\n  -d '${JSON.stringify(body, null, 2).replaceAll("'", "'\\''")}'`
  const method = {'/v1/chat/completions': 'chat.completions.create', '/v1/completions': 'completions.create', '/v1/embeddings': 'embeddings.create', '/v1/rerank': ''}[path]
  if (!method) {
    const fetchCall = `const response = await fetch('${location.origin}${path}', {\n  method: 'POST',\n  headers: {'Content-Type': 'application/json'${withToken ? ", Authorization: `Bearer ${process.env.SERVICE_API_KEY}`" : ''}},\n  body: JSON.stringify(${JSON.stringify(body, null, 2)}),\n})\nconsole.log(await response.json())`
    const requests = `import os, requests\n\nresponse = requests.post("${location.origin}${path}", json=${pythonValue(body)}${withToken ? ', headers={"Authorization": f"Bearer {os.environ[\'SERVICE_API_KEY\']}"}' : ''})\nprint(response.json())`
    return {curl, javascript: fetchCall, python: requests}
  }

  const stream = body.stream === true
  const python = `import os\nfrom openai import OpenAI\n\nclient = OpenAI(base_url="${base}", api_key=${key})\nresult = client.${method}(**${pythonValue(body)})\n${
    stream ? 'for chunk in result:\n    print(chunk)' : 'print(result)'
  }`
  const javascript = `import OpenAI from 'openai'\n\nconst client = new OpenAI({baseURL: '${base}', apiKey: ${jsKey}})\nconst result = await client.${method}(${JSON.stringify(body, null, 2)})\n${
    stream ? 'for await (const chunk of result) console.log(chunk)' : 'console.log(result)'
  }`
  return {curl, javascript, python}
}
