# Source this file: it makes sure `cmake` and a C++ compiler are on PATH, which building stable-diffusion-cpp-python
# (the stable-diffusion.cpp engine's binding, published only as source) needs when its environment is first made.
# Where one is missing they are installed once from Debian's packages (apt-get install cmake g++, about a minute on a
# fresh machine); nothing happens when both are there.
if ! command -v cmake >/dev/null 2>&1 || ! command -v g++ >/dev/null 2>&1; then
  echo "cmake or g++ is missing: installing Debian's cmake and g++ packages" >&2
  service_sudo=""; [ "$(id -u)" -eq 0 ] || service_sudo="sudo"
  $service_sudo apt-get update -qq >&2 && $service_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends cmake g++ >&2 || return 1
  unset service_sudo
fi
