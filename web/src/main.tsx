/**
 * The web interface's shell: the navigation, the pages at their paths under /ui (deep links work: the service
 * answers every /ui path with this app), and the login gate when the service has access control on.
 */
import {render} from 'preact'
import {useEffect, useState} from 'preact/hooks'
import {lazy, LocationProvider, Route, Router, useLocation} from 'preact-iso'

import {client, logOut, token, whenUnauthorized} from './api.js'
import {CachePage} from './pages/cache.js'
import {ClusterPage} from './pages/cluster.js'
import {LaunchPage} from './pages/launch.js'
import {LoginPage} from './pages/login.js'
import {ModelsPage} from './pages/models.js'
import './style.css'

// The first page (Launch) loads alone; the playgrounds, with the Markdown and highlighting libraries, load when opened.
const PlaygroundPage = lazy(() => import('./pages/playground.js').then((module) => module.PlaygroundPage))
const RegisterPage = lazy(() => import('./pages/register.js').then((module) => module.RegisterPage))
const UsagePage = lazy(() => import('./pages/usage.js').then((module) => module.UsagePage))

const PAGES = [
  {href: '/ui/', label: 'Launch'},
  {href: '/ui/models', label: 'Running models'},
  {href: '/ui/playground', label: 'Playground'},
  {href: '/ui/register', label: 'Register'},
  {href: '/ui/cache', label: 'Cache'},
  {href: '/ui/cluster', label: 'Cluster'},
  {href: '/ui/usage', label: 'Usage'},
]

function Shell() {
  const location = useLocation()
  const [auth, setAuth] = useState<boolean | undefined>(undefined)
  const [notice, setNotice] = useState<string | undefined>(undefined)

  useEffect(() => {
    client.request<{auth: boolean}>('GET', '/v1/cluster/auth').then(
      ({auth}) => setAuth(auth),
      () => setAuth(false),
    )
    return whenUnauthorized(() => {
      token.clear()
      setNotice('Your session ended (the token expired or was refused): log in again.')
      location.route(`/ui/login?next=${encodeURIComponent(window.location.pathname)}`)
    })
  }, [])

  const atLogin = location.path === '/ui/login'
  useEffect(() => {
    if (!atLogin) setNotice(undefined)
  }, [atLogin])
  useEffect(() => {
    if (auth && !token.get() && !atLogin) location.route(`/ui/login?next=${encodeURIComponent(location.url)}`, true)
  }, [auth, location.url])

  if (auth === undefined) return <p class="loading">Connecting to the service…</p>
  if (auth && !token.get() && !atLogin) return null
  const leave = async () => {
    await logOut()
    setNotice('You are logged out.')
    location.route('/ui/login')
  }

  return (
    <>
      <header>
        <a class="brand" href="/ui/">
          service-toolkit
        </a>
        {!atLogin && (
          <nav aria-label="Pages">
            {PAGES.map(({href, label}) => (
              <a aria-current={location.path === href || (href !== '/ui/' && location.path.startsWith(href)) ? 'page' : undefined} href={href} key={href}>
                {label}
              </a>
            ))}
          </nav>
        )}
        {auth && token.get() && (
          <button class="secondary" onClick={() => void leave()} type="button">
            Log out
          </button>
        )}
      </header>
      <main>
        {notice && atLogin && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        <Router>
          <Route component={LaunchPage} path="/ui/" />
          <Route component={ModelsPage} path="/ui/models" />
          <Route component={PlaygroundPage} path="/ui/playground/:uid?" />
          <Route component={RegisterPage} path="/ui/register" />
          <Route component={CachePage} path="/ui/cache" />
          <Route component={ClusterPage} path="/ui/cluster" />
          <Route component={UsagePage} path="/ui/usage" />
          <Route component={LoginPage} path="/ui/login" />
          <Route component={NotFound} default />
        </Router>
      </main>
    </>
  )
}

function NotFound() {
  return (
    <section>
      <h1>No such page</h1>
      <p>
        <a href="/ui/">Go to the catalogue</a>.
      </p>
    </section>
  )
}

render(
  <LocationProvider scope="/ui">
    <Shell />
  </LocationProvider>,
  document.querySelector('#app')!,
)
