#!/usr/bin/env bash
# hack/test.sh is the project's one test command: the README names it and .ci/run calls it.
# For every Go module in the repository it checks formatting, runs go vet, runs every test
# with the race detector (fuzz targets run their seed corpus only), and runs every benchmark
# once (-benchtime 1x) so that none of them rots; the figures in BENCHMARKS.md come from
# longer runs. It fails on the first failing check.
set -euo pipefail
cd "$(dirname "$0")/.."

modules=$(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -exec dirname {} \; | sort)

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need formatting:" >&2
  echo "$unformatted" >&2
  exit 1
fi
echo "gofmt: ok"

for m in $modules; do
  echo "== module $m"
  (cd "$m" && go vet ./... && go test -race -count=1 ./...)
  log=$(mktemp)
  if ! (cd "$m" && go test -run '^$' -bench . -benchtime 1x ./... >"$log" 2>&1); then
    cat "$log"
    exit 1
  fi
  rm -f "$log"
  echo "benchmarks of $m: each ran once"
done
