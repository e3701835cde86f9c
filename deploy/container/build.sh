#!/usr/bin/env bash
# Builds service-toolkit's container images from this checkout: packs the npm packages (building them first, as
# `npm pack` does), then builds deploy/container/Containerfile with podman (or docker).
#   cpu   -> IMAGE:<version>-cpu                                on BASE_IMAGE (default node:24-bookworm-slim)
#   cuda  -> IMAGE:<version>-cu129, IMAGE:<version>, IMAGE:latest on CUDA_BASE_IMAGE (default CUDA 12.9 runtime)
# Usage: deploy/container/build.sh [cpu] [cuda]   (default: cpu)
# Environment: IMAGE (default service-toolkit), CONTAINER_ENGINE (podman or docker), BASE_IMAGE, CUDA_BASE_IMAGE,
# BUILD_NETWORK (the build's network, e.g. `host` where the build's own network cannot reach the npm registry),
# TARGET (the Containerfile's stage: `image`, the default, or `bench`, the image with llama-server for bench/image.ts).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
engine=${CONTAINER_ENGINE:-$(command -v podman >/dev/null 2>&1 && echo podman || echo docker)}
image=${IMAGE:-service-toolkit}
base=${BASE_IMAGE:-docker.io/library/node:24-bookworm-slim}
cuda_base=${CUDA_BASE_IMAGE:-docker.io/nvidia/cuda:12.9.1-runtime-ubuntu24.04}
version=$(node -p "require('$root/package.json').version")
[ $# -gt 0 ] || set -- cpu

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp -p "$here/Containerfile" "$here/entrypoint.sh" "$here/healthcheck.mjs" "$context/"
mkdir "$context/packages"
(cd "$root" && npm pack --silent --loglevel=error --workspaces --include-workspace-root --pack-destination "$context/packages" >/dev/null)
# The client library is for applications; the image runs the service.
rm -f "$context"/packages/service-toolkit-client-*.tgz
# The llama-cpp stage's input: the engine's build program, out of its package, and the node-llama-cpp it pins.
mkdir "$context/llama-cpp"
tar -xzf "$context"/packages/service-toolkit-plugin-engine-llama-cpp-*.tgz -C "$context/llama-cpp" --strip-components=2 \
  package/dist/build-portable.js package/dist/portable-build.js
node -e "const {dependencies} = require('$root/plugins/engine-llama-cpp/package.json'); console.log(JSON.stringify({dependencies: {'node-llama-cpp': dependencies['node-llama-cpp']}, name: 'llama-cpp-build', private: true}))" >"$context/llama-cpp/package.json"
# Layers record file times: tarballs of the same content get the same time, so an unchanged build reuses its cache.
touch -d @315532800 "$context"/packages/*.tgz "$context"/llama-cpp/*

# npm in the build trusts the certificate authorities Node and npm are given here (a proxy's, for instance).
cafile=${NODE_EXTRA_CA_CERTS:-$(npm config get cafile 2>/dev/null || true)}
if [ -z "$cafile" ] || [ "$cafile" = null ] || [ ! -s "$cafile" ]; then
  cafile="$context/no-cafile"
  : >"$cafile"
fi

# Docker's format: OCI images drop HEALTHCHECK.
options=()
[ "$engine" = podman ] && options+=(--format docker)
[ -n "${BUILD_NETWORK:-}" ] && options+=(--network "$BUILD_NETWORK")
for variant in "$@"; do
  case "$variant" in
    cpu) tags=("$version-cpu"); variant_base=$base ;;
    cuda) tags=("$version-cu129" "$version" latest); variant_base=$cuda_base ;;
    *) echo "unknown variant $variant: cpu or cuda" >&2; exit 2 ;;
  esac
  "$engine" build "${options[@]}" --target "${TARGET:-image}" --build-arg VARIANT="$variant" --build-arg BASE_IMAGE="$variant_base" --build-arg NODE_IMAGE="$base" \
    --secret id=cafile,src="$cafile" \
    "${tags[@]/#/--tag=$image:}" -f "$context/Containerfile" "$context"
done
