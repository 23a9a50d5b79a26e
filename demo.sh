#!/usr/bin/env bash
# Runs the replenish demo on this machine: builds the viewer and the sender,
# starts both on loopback and prints the URL to open. Extra arguments go to
# the sender (e.g. ./demo.sh -max-res 640x360). Stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")"
[[ -d /usr/local/go/bin ]] && export PATH=$PATH:/usr/local/go/bin
scripts/deps.sh

mkdir -p bin
go build -o bin/ ./cmd/viewer ./cmd/sender

HTTP=${REPLENISH_HTTP:-127.0.0.1:8080}
MEDIA=${REPLENISH_LISTEN:-127.0.0.1:7000}

pids=()
cleanup() {
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

bin/viewer -listen "$MEDIA" -http "$HTTP" &
pids+=($!)
# Wait until the viewer accepts connections (at most 10 s).
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/${HTTP%:*}/${HTTP##*:}") 2>/dev/null; then break; fi
  sleep 0.1
done
bin/sender -to "$MEDIA" -name replenish "$@" &
pids+=($!)

echo
echo "  replenish demo: open http://$HTTP/ in a browser (Ctrl-C stops)"
echo
wait -n "${pids[@]}"
