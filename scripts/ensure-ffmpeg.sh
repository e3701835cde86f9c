# Source this file: it makes sure FFmpeg's `ffmpeg` program is on PATH, which the audio routes decode uploads with
# (and their tests make test audio with). Where it is missing it is installed once from Debian's packages
# (apt-get install ffmpeg, about a minute on a fresh machine); nothing happens when it is already there.
if ! command -v ffmpeg >/dev/null 2>&1; then
  echo "ffmpeg is missing: installing Debian's ffmpeg package" >&2
  service_sudo=""; [ "$(id -u)" -eq 0 ] || service_sudo="sudo"
  $service_sudo apt-get update -qq >&2 && $service_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ffmpeg >&2 || return 1
  unset service_sudo
fi
