#!/usr/bin/env bash
# Installs the Debian package `chromium` when it is missing: the web interface's tests drive it headless with
# playwright-core, which never downloads a browser of its own. Idempotent; a second run costs nothing.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "Installing the Debian package chromium for the web interface's browser tests" >&2
# Several jobs may share the machine: wait for another apt run's lock rather than fail.
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
