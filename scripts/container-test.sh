#!/usr/bin/env bash
# Tests the container image for real: installs podman, runc and mmdebstrap from Debian if missing, makes the base
# image from Debian packages where no registry can give it (deploy/container/make-base-image.sh, cached under
# ~/.cache/service-test), builds the CPU image with deploy/container/build.sh, and runs test/e2e/container.test.ts
# against it (a model launched and chatted with through the mapped port, restarts, SIGKILL, supervisor and worker).
#   scripts/container-test.sh            build, then run the test
#   scripts/container-test.sh --build    only build; prints the image's name last (the test's own setup uses this)
# IMAGE names the image to build (default: service-toolkit-test, tagged <version>-cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ensure-node.sh

missing=()
for program in podman runc mmdebstrap; do
  command -v "$program" >/dev/null 2>&1 || missing+=("$program")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} from Debian" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi

# These machines run containers as root with runc and cgroupfs and no default ulimits (the file says why).
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/test/fixtures/container/containers.conf}"
deploy/container/make-base-image.sh >&2
# The build's own network reaches no registry here; the host's does.
export IMAGE="${IMAGE:-service-toolkit-test}" BUILD_NETWORK="${BUILD_NETWORK:-host}"
deploy/container/build.sh cpu >&2
image="localhost/$IMAGE:$(node -p "require('./package.json').version")-cpu"

if [ "${1:-}" = --build ]; then
  echo "$image"
else
  SERVICE_CONTAINER_IMAGE="$image" npx mocha test/e2e/container.test.ts
fi
