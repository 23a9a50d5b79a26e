#!/usr/bin/env bash
# Runs the replenish demo on this machine: builds the viewer and the sender,
# starts both on loopback and prints the URL to open. Extra arguments go to
# the sender (e.g. ./demo.sh -max-res 640x360, or ./demo.sh -transport quic,
# which pins the viewer's certificate for the sender). Stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")"
[[ -d /usr/local/go/bin ]] && export PATH=$PATH:/usr/local/go/bin
scripts/deps.sh

mkdir -p bin
go build -o bin/ ./cmd/viewer ./cmd/sender

HTTP=${REPLENISH_HTTP:-127.0.0.1:8080}
MEDIA=${REPLENISH_LISTEN:-127.0.0.1:7000}

# The viewer writes its certificate's fingerprint here once it listens; a
# QUIC sender pins exactly that certificate.
run=$(mktemp -d)
pids=()
cleanup() {
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT INT TERM

bin/viewer -listen "$MEDIA" -http "$HTTP" -fingerprint-file "$run/fingerprint" &
pids+=($!)
# Wait until the viewer listens (at most 10 s).
for _ in $(seq 100); do
  [[ -s "$run/fingerprint" ]] && break
  sleep 0.1
done
if [[ ! -s "$run/fingerprint" ]]; then
  echo "demo: the viewer did not start" >&2
  exit 1
fi

# -transport quic (or -transport=quic) among the arguments: pin the viewer.
pin=()
prev=
for a in "$@"; do
  if [[ "$a" == "-transport=quic" || "$a" == "--transport=quic" || ( "$a" == quic && ( "$prev" == -transport || "$prev" == --transport ) ) ]]; then
    pin=(-pin "$(cat "$run/fingerprint")")
  fi
  prev=$a
done
bin/sender -to "$MEDIA" -name replenish "${pin[@]}" "$@" &
pids+=($!)

echo
echo "  replenish demo: open http://$HTTP/ in a browser (Ctrl-C stops)"
echo
wait -n "${pids[@]}"
