/** The login page: posts the username and password to /token and keeps the access token for this browser tab. */
import {useState} from 'preact/hooks'
import {useLocation} from 'preact-iso'

import {client, describeError, token} from '../api.js'

export function LoginPage() {
  const location = useLocation()
  const [error, setError] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)

  const submit = async (event: Event) => {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    setBusy(true)
    setError(undefined)
    try {
      const {access_token: accessToken} = await client.login(String(form.get('username')), String(form.get('password')))
      token.set(accessToken)
      const next = location.query.next
      location.route(next?.startsWith('/ui') && !next.startsWith('/ui/login') ? next : '/ui/', true)
    } catch (failure) {
      setError(describeError(failure))
    } finally {
      setBusy(false)
    }
  }

  return (
    <section class="login">
      <h1>Log in</h1>
      <p>This service has access control on: log in with the username and password from its access-control config.</p>
      <form onSubmit={submit}>
        <label>
          Username
          <input autoComplete="username" autoFocus name="username" required />
        </label>
        <label>
          Password
          <input autoComplete="current-password" name="password" required type="password" />
        </label>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button disabled={busy} type="submit">
          Log in
        </button>
      </form>
    </section>
  )
}
