#!/usr/bin/env bash
# hack/versions.sh tests the published modules at both ends of the Kubernetes versions they
# support (README.md, "Versions"). hack/test.sh runs it, so CI does.
#
# The oldest: each published module's go.mod requires its k8s.io modules at its floor, the
# oldest release that has what it uses and passes its tests (the core v0.35.0, clientgo
# v0.36.0, clientgo/device v0.37.2), because Go's minimal version selection lifts every
# importer to what a go.mod requires. For each of them, in a temporary copy of the tree
# with GOWORK=off (the repository's go.work would lift everything to the newest), whose
# go.mod is lowered to the floor (its requirements of the library's own modules replaced by
# the copy's folders, then go mod tidy):
#
#  1. its floor world is the build list of an empty module that requires only the k8s.io
#     modules it requires directly, at the floor: what a program on that Kubernetes release
#     has;
#  2. every k8s.io and sigs.k8s.io module of its own build list must be at the floor
#     world's version: a requirement above it (of a dependency, a test's included) fails
#     here, naming the module, as it would lift a program on the oldest release;
#  3. go vet, and every test with -race (the seed corpus of the fuzz targets; no
#     benchmark), at those versions: a test that fails at the floor fails here.
#
# The newest: the repository's go.work resolves every module to the versions the commands
# require (examples/controller: the newest patch of the newest minor), and hack/test.sh's
# loop tests every module there; this script checks that the workspace resolves
# k8s.io/api and k8s.io/client-go to that version.
#
# MODULES="clientgo" runs only those folders. KEEP=1 keeps the temporary folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

core=github.com/taintevict/taintevict
# The published modules, by folder; a folder without a go.mod (yet) is left out.
published=(. clientgo clientgo/device)
want=${MODULES:-${published[*]}}

newest=$(GOWORK=off go mod edit -json examples/controller/go.mod |
  awk '$1 == "\"Path\":" && $2 == "\"k8s.io/api\"," { getline; gsub(/[",]/, "", $2); print $2; exit }')
for m in k8s.io/api k8s.io/client-go; do
  got=$(go list -m -f '{{.Version}}' "$m")
  if [ "$got" != "$newest" ]; then
    echo "versions: the workspace resolves $m to $got, want the newest, $newest (examples/controller/go.mod)" >&2
    exit 1
  fi
done
echo "versions: newest $newest: the workspace resolves k8s.io/api and k8s.io/client-go to it (hack/test.sh tests every module there)"

tmp=$(mktemp -d)
cleanup() {
  if [ "${KEEP:-}" = 1 ]; then
    echo "versions: kept $tmp" >&2
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

# The working tree's files of the library's modules, as git would commit them.
tree="$tmp/tree"
mkdir -p "$tree"
git ls-files -z --cached --others --exclude-standard -- "${published[@]}" |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -cf - -T - | tar -xf - -C "$tree"
rm -f "$tree/go.work" "$tree/go.work.sum"

export GOWORK=off GOFLAGS=-mod=mod
# quiet runs a command, and shows what it printed only if it fails.
quiet() {
  local log
  log=$(mktemp -p "$tmp")
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    return 1
  fi
}
for dir in $want; do
  [ -f "$root/$dir/go.mod" ] || continue
  mod="$tree/$dir"
  path=$(go mod edit -json "$mod/go.mod" | awk '$1 == "\"Path\":" { gsub(/[",]/, "", $2); print $2; exit }')
  # 1. The k8s.io modules it requires directly, at the versions it requires: its floor.
  direct=$(go mod edit -json "$mod/go.mod" | awk '
    $1 == "\"Path\":" { p = $2; gsub(/[",]/, "", p); v = ""; ind = 0 }
    $1 == "\"Version\":" { v = $2; gsub(/[",]/, "", v) }
    $1 == "\"Indirect\":" { ind = 1 }
    $1 ~ /^}/ { if (p ~ /^k8s\.io\// && v ~ /^v0\.[0-9]+\.[0-9]+$/ && !ind) print p "@" v; p = "" }
  ' | sort -u)
  if [ -z "$direct" ]; then
    echo "versions: $path requires no k8s.io module directly" >&2
    exit 1
  fi
  floor="$tmp/floor-${dir//\//-}"
  mkdir -p "$floor"
  (cd "$floor" && quiet go mod init example.com/floor && quiet go get $direct)
  (cd "$floor" && go list -m all) | awk 'NR > 1' | sort >"$floor/world"

  # The library's modules, from the copy; then tidy, which lowers nothing it does not have to.
  for p in "${published[@]}"; do
    [ -f "$tree/$p/go.mod" ] || continue
    lib=$(go mod edit -json "$tree/$p/go.mod" | awk '$1 == "\"Path\":" { gsub(/[",]/, "", $2); print $2; exit }')
    [ "$lib" = "$path" ] || (cd "$mod" && go mod edit -replace "$lib=$tree/$p")
  done
  (cd "$mod" && quiet go mod tidy)

  # 2. Nothing above the floor world.
  bad=0
  while read -r p v; do
    w=$(awk -v p="$p" '$1 == p { print $2 }' "$floor/world")
    if [ -n "$w" ] && [ "$v" != "$w" ]; then
      echo "versions: $path at its floor ($(echo $direct)) has $p $v, above the floor world's $w: something it requires lifts it" >&2
      bad=1
    fi
  done < <(cd "$mod" && go list -m all | awk 'NR > 1 && ($1 ~ /^k8s\.io\// || $1 ~ /^sigs\.k8s\.io\//) && NF == 2')
  [ "$bad" = 0 ] || exit 1
  echo "== versions: $path at its floor: $(echo $direct)"

  # 3. Vet and test there.
  (cd "$mod" && go vet ./... && go test -race -count=1 -timeout 30m ./...)
done
echo "versions: ok"
