#!/usr/bin/env bash
# hack/kube-replaces.sh VERSION prints the go.mod replace block that a module importing
# k8s.io/kubernetes@VERSION (e.g. v1.37.2) needs. k8s.io/kubernetes requires its staging
# modules (k8s.io/api, k8s.io/client-go, ...) at v0.0.0 and replaces them with folders of its
# own repository; a module that imports it must map each of them to the published version
# instead (v1.X.Y -> v0.X.Y). The list is read from that version's go.mod itself, so it is
# never out of date; with a partial list builds may work but `go list -m all` fails.
#
# Usage: hack/kube-replaces.sh v1.37.2 >> go.mod
set -euo pipefail

version=${1:?usage: hack/kube-replaces.sh VERSION (e.g. v1.37.2)}
if [[ ! $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "kube-replaces.sh: VERSION must look like v1.37.2, got $version" >&2
  exit 2
fi
staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

# Outside any module, so that the repository's own go.mod plays no part.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gomod=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$version" |
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
if [ -z "$gomod" ] || [ ! -f "$gomod" ]; then
  echo "kube-replaces.sh: could not download the go.mod of k8s.io/kubernetes@$version" >&2
  exit 1
fi

# Every k8s.io module required at v0.0.0, in a require block or on a single require line.
modules=$(awk '
  /^require[[:space:]]*\(/ { inblock = 1; next }
  inblock && /^\)/ { inblock = 0; next }
  inblock { print $1, $2; next }
  /^require[[:space:]]/ { print $2, $3 }
' "$gomod" | awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print $1 }' | sort -u)
if [ -z "$modules" ]; then
  echo "kube-replaces.sh: no staging modules at v0.0.0 in $gomod" >&2
  exit 1
fi

echo "replace ("
for m in $modules; do
  printf '\t%s => %s %s\n' "$m" "$m" "$staging"
done
echo ")"
