// VitePress's own heading slugs (its default, from @mdit-vue/shared, which it bundles and does not export), given to
// the site's config and to the tests' link checker so that an anchor the checker accepts is one the site has.
const CONTROL = /[\u0000-\u001f]/g
const SPECIAL = /[\s~`!@#$%^&*()\-_+=[\]{}|\\;:"'“”‘’<>,.?/]+/g
const COMBINING = /[\u0300-\u036F]/g

export const slugify = (text) =>
  text
    .normalize('NFKD')
    .replace(COMBINING, '')
    .replace(CONTROL, '')
    .replace(SPECIAL, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '')
    .replace(/^(\d)/, '_$1')
    .toLowerCase()
