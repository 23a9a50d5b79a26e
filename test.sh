#!/usr/bin/env bash
# Runs every replenish test: installs what the tests need (libvpx-dev,
# pkg-config, chromium), downloads the Go modules, then vets and runs all
# tests with the race detector. Tests that need root (network namespaces)
# skip with a message when not run as root.
set -euo pipefail
cd "$(dirname "$0")"
[[ -d /usr/local/go/bin ]] && export PATH=$PATH:/usr/local/go/bin
scripts/deps.sh --browser
go mod download
go vet ./...
# A race report is printed when the race happens, before the failing
# test's own log: on failure the reports are repeated last, where a
# truncated log still shows them.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! go test -race -count=1 -timeout 20m ./... "$@" 2>&1 | tee "$log"; then
	if grep -q '^WARNING: DATA RACE' "$log"; then
		echo "=== the data races reported above, again:"
		awk '/^WARNING: DATA RACE/,/^==================$/' "$log" | head -n 300
	fi
	exit 1
fi
# The rate controller on the path model, every path with fifteen seeds
# (and the short matrix with delayed ACKs): a pure computation the race
# detector only slows tenfold, so it runs without it (under -race the
# tests skip themselves).
go test -count=1 -timeout 10m -run '^TestRateControl(OnPaths|DelayedAck)$' ./sender
