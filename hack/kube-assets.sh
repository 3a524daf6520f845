#!/usr/bin/env bash
# hack/kube-assets.sh [VERSION] makes the real control plane that the e2e suite runs on:
# etcd (Debian's etcd-server) and kube-apiserver, built from k8s.io/kubernetes at VERSION, and
# kube-controller-manager of the same version (for bench/scale).
# VERSION defaults to the one matching client-go in examples/controller/go.mod (v0.37.2 ->
# v1.37.2). Nothing prebuilt is downloaded: kube-apiserver is built from the Go module proxy in
# a throwaway module under the cache folder, outside the repository. The binary is cached there,
# keyed by version, so a second run takes seconds. The last line of output is the folder holding
# `kube-apiserver`, `etcd` and `kube-controller-manager`, ready for KUBEBUILDER_ASSETS:
#
#   export KUBEBUILDER_ASSETS=$(bash hack/kube-assets.sh | tail -1)
#
# A cold build takes about 9 minutes on two cores and needs about 1 GB of module and build cache.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

version=${1:-}
if [ -z "$version" ]; then
  cg=$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$root/examples/controller/go.mod")
  if [[ ! $cg =~ ^v0\.([0-9]+)\.([0-9]+)$ ]]; then
    echo "kube-assets.sh: cannot read the client-go version from examples/controller/go.mod" >&2
    exit 1
  fi
  version="v1.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
fi

cache=${XDG_CACHE_HOME:-$HOME/.cache}/taintevict/kube-assets
dir=$cache/$version
mkdir -p "$dir"
log() { echo "kube-assets.sh: $*" >&2; }

# One build at a time per version: a second caller waits and then finds the binary.
exec 9>"$dir.lock"
flock 9

find_etcd() {
  command -v etcd 2>/dev/null || { [ -x /usr/bin/etcd ] && echo /usr/bin/etcd; } || true
}
etcd=$(find_etcd)
if [ -z "$etcd" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing etcd-server with apt-get"
    # The package may try to start a system service; the e2e suite starts its own etcd.
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >&2
    etcd=$(find_etcd)
  fi
  if [ -z "$etcd" ]; then
    log "etcd not found; install it (as root): apt-get update && apt-get install -y etcd-server"
    exit 1
  fi
fi
ln -sf "$etcd" "$dir/etcd"

# build_binary NAME builds k8s.io/kubernetes/cmd/NAME at $version into $dir/NAME, in a
# throwaway module under the cache folder that requires k8s.io/kubernetes with the replace list.
build_binary() {
  local name=$1 start build minor pkg
  start=$(date +%s)
  build=$dir/build-$name
  rm -rf "$build"
  mkdir -p "$build"
  {
    echo "module taintevict.local/kube-assets"
    echo
    echo "go $(go env GOVERSION | sed 's/^go//')"
    echo
    bash "$root/hack/kube-replaces.sh" "$version"
  } >"$build/go.mod"
  (
    cd "$build"
    export GOFLAGS=-mod=mod GOWORK=off
    go get -tool "k8s.io/kubernetes/cmd/$name@$version" >&2
    minor=${version#v1.}
    minor=${minor%%.*}
    pkg=k8s.io/component-base/version
    go build -trimpath -o "$dir/$name.tmp" \
      -ldflags "-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor" \
      "k8s.io/kubernetes/cmd/$name" >&2
  )
  mv "$dir/$name.tmp" "$dir/$name"
  rm -rf "$build"
  log "built $name $version in $(($(date +%s) - start)) s"
}

# kube-apiserver for the control plane; kube-controller-manager for bench/scale, which runs
# kube's own taint-eviction-controller side by side with taintevict's (a few minutes more
# once kube-apiserver is built: the two share most of their packages in Go's build cache).
for name in kube-apiserver kube-controller-manager; do
  if [ -x "$dir/$name" ]; then
    log "$name $version already built"
  else
    log "building $name $version (kube-apiserver about 9 minutes cold on two cores)"
    build_binary "$name"
  fi
done

echo "$dir"
