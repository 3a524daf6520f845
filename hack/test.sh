#!/usr/bin/env bash
# hack/test.sh is the project's one test command: the README names it and .ci/run calls it.
# For every Go module in the repository (the core, clientgo, clientgo/device,
# controllerruntime, examples/controller, examples/kubectl-taintevict, bench, and the tools
# under hack/, among them hack/chart, the Helm chart's tests; the root go.work resolves the
# published modules from the checkout, and bench and the tools have a go.work of their own)
# it checks formatting, runs go vet,
# runs every test with the race detector (fuzz targets run their seed corpus only), and runs
# every benchmark once (-benchtime 1x) so that none of them rots; the figures in
# BENCHMARKS.md come from longer runs; that loop runs in the workspace, at the newest
# Kubernetes modules supported. Then hack/versions.sh tests the published modules at their
# oldest (README.md, "Versions"), and it runs hack/release-check.sh (a module outside
# the repository builds against the modules as the next tag would publish them, with the
# README's go get lines and snippet), and the end-to-end suite,
# examples/controller/e2e, on a real kube-apiserver and etcd, which it makes first with
# `bash hack/kube-assets.sh` (controllerruntime's tests, the release check's operator and the
# bench module's small scale run, bench/scale, need them too; each, run alone without them,
# fails with that command in its message). It fails
# on the first failing check.
set -euo pipefail
cd "$(dirname "$0")/.."

modules=$(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -exec dirname {} \; | sort)
e2e=./examples/controller/e2e

# The real control plane: etcd from apt, kube-apiserver and kube-controller-manager built
# from source, once (10 to 30 minutes cold on two cores), then found in the cache in seconds.
# A folder given in KUBEBUILDER_ASSETS is used as it is. It is made first: the
# controllerruntime module's tests, the bench module's small scale run, the release check's
# operator and the end-to-end suite all run on it.
if [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
  KUBEBUILDER_ASSETS=$(bash hack/kube-assets.sh | tail -n 1)
  export KUBEBUILDER_ASSETS
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need formatting:" >&2
  echo "$unformatted" >&2
  exit 1
fi
echo "gofmt: ok"

for m in $modules; do
  echo "== module $m"
  # Every package but the end-to-end suite, which runs last.
  pkgs=$(cd "$m" && go list ./... | grep -v '/examples/controller/e2e$' || true)
  # An explicit timeout: some tests build a binary (the command, its image), minutes on a
  # busy two-core machine with cold caches; go test's default of 10 minutes once killed one.
  (cd "$m" && go vet ./... && go test -race -count=1 -timeout 45m $pkgs)
  log=$(mktemp)
  if ! (cd "$m" && go test -run '^$' -bench . -benchtime 1x -timeout 45m $pkgs >"$log" 2>&1); then
    cat "$log"
    exit 1
  fi
  rm -f "$log"
  echo "benchmarks of $m: each ran once"
done

echo "== versions: the published modules at their oldest supported Kubernetes modules"
bash hack/versions.sh

echo "== release check: the modules as a tag would publish them, used from outside"
bash hack/release-check.sh

echo "== end-to-end suite on a real kube-apiserver and etcd ($e2e)"
# E2E_SLOW=1 (CI sets it) adds the slow scenarios: faults of the control plane, load while failing.
slow_args=()
if [ "${E2E_SLOW:-}" = 1 ]; then
  slow_args=(-args -e2e.slow)
fi
(cd "$e2e" && go test -race -count=1 -timeout 25m . "${slow_args[@]}")
