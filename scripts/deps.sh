#!/usr/bin/env bash
# Installs the system packages replenish needs on Debian or Ubuntu, or says
# exactly what to install. Usage: scripts/deps.sh [--browser]
#   (no flag)   libvpx-dev and pkg-config: building the sender and viewer
#   --browser   also chromium: the headless browser tests
set -euo pipefail

need=()
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if ! pkg-config --exists vpx 2>/dev/null; then need+=(libvpx-dev); fi
command -v gcc >/dev/null 2>&1 || need+=(gcc)
if [[ "${1:-}" == "--browser" ]]; then
  command -v chromium >/dev/null 2>&1 || [[ -x /usr/bin/chromium ]] || need+=(chromium)
  command -v ip >/dev/null 2>&1 || need+=(iproute2)
fi

if ! command -v go >/dev/null 2>&1; then
  if [[ -x /usr/local/go/bin/go ]]; then
    echo "deps: go is at /usr/local/go/bin but not on PATH; run: export PATH=\$PATH:/usr/local/go/bin" >&2
  else
    echo "deps: Go 1.26 or later is required (https://go.dev/doc/install)" >&2
  fi
  exit 1
fi

if ((${#need[@]} == 0)); then
  exit 0
fi
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "deps: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "deps: missing packages; install them with:" >&2
  echo "  sudo apt-get install ${need[*]}" >&2
  exit 1
fi
