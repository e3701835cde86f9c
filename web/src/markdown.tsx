/**
 * A reply rendered as Markdown: marked parses it, DOMPurify removes any HTML that could run script or load a file (a
 * model's reply is untrusted text), and highlight.js colours code blocks once the reply is complete (while it streams,
 * code stays plain, so each new token costs one parse and no highlighting).
 */
import DOMPurify from 'dompurify'
import hljs from 'highlight.js/lib/core'
import bash from 'highlight.js/lib/languages/bash'
import json from 'highlight.js/lib/languages/json'
import python from 'highlight.js/lib/languages/python'
import typescript from 'highlight.js/lib/languages/typescript'
import {Marked} from 'marked'
import {useEffect, useMemo, useRef} from 'preact/hooks'

hljs.registerLanguage('bash', bash)
hljs.registerLanguage('json', json)
hljs.registerLanguage('python', python)
hljs.registerLanguage('typescript', typescript)
hljs.registerAliases(['javascript', 'js', 'ts'], {languageName: 'typescript'})
hljs.registerAliases(['sh', 'shell'], {languageName: 'bash'})

const marked = new Marked({breaks: true, gfm: true})

/**
 * Only what Markdown itself makes, with none of the attributes that load or style anything: a reply naming an image,
 * a background or a form's address elsewhere would make the page load it from another host, or lay a look-alike over
 * the page. Code blocks keep their `language-…` class, which the highlighting reads.
 */
const SANITIZE = {
  ALLOWED_ATTR: ['align', 'class', 'href', 'start', 'title'],
  ALLOWED_TAGS: ['a', 'b', 'blockquote', 'br', 'code', 'del', 'em', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'i', 'kbd', 'li', 'ol', 'p', 'pre', 's', 'strong', 'sub', 'sup', 'table', 'tbody', 'td', 'th', 'thead', 'tr', 'ul'],
}

DOMPurify.addHook('uponSanitizeAttribute', (node, data) => {
  if (data.attrName === 'class' && !(node.nodeName === 'CODE' && /^language-[\w+#-]+$/.test(data.attrValue))) data.keepAttr = false
})

export const renderMarkdown = (text: string) => DOMPurify.sanitize(marked.parse(text, {async: false}), SANITIZE)

export function Markdown({streaming = false, text}: {text: string; streaming?: boolean}) {
  const html = useMemo(() => renderMarkdown(text), [text])
  const element = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (streaming || !element.current) return
    for (const block of element.current.querySelectorAll<HTMLElement>('pre code')) hljs.highlightElement(block)
  }, [html, streaming])
  return <div class="markdown" dangerouslySetInnerHTML={{__html: html}} ref={element} />
}
