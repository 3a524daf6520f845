#!/usr/bin/env bash
# hack/release-check.sh checks that the next release works for someone outside the
# repository, before it is tagged. hack/test.sh runs it, so CI does.
#
#  1. The version is the one clientgo/go.mod requires of the core (the modules are released
#     together: core vX, clientgo/vX, clientgo/device/vX, controllerruntime/vX,
#     examples/controller/vX, examples/kubectl-taintevict/vX). Every go.mod in the
#     repository that requires one of the library's modules must require that version, and
#     so must every `go get` line of ours in a README.md (CHANGELOG.md keeps old ones).
#  2. hack/release (a module of its own) writes a Go module proxy folder from the working
#     tree at that version: the core, clientgo, clientgo/device, controllerruntime,
#     examples/controller and
#     examples/kubectl-taintevict, as a tag of it would publish them.
#  3. In a fresh module in a temporary folder outside the repository, with GOWORK=off,
#     GOFLAGS=-mod=mod, that folder first in GOPROXY, and GONOSUMDB for the library's
#     modules only (the checksum database is still asked about every other module), it runs
#     the `go get` lines of README.md's block marked `<!-- release-check: go-get -->`,
#     exactly as they are, and writes each Go block marked `<!-- release-check: file NAME
#     -->` to NAME, and runs the `go run` lines of the block marked `<!-- release-check:
#     go-run -->` (the demo, from anywhere). It builds and vets the snippets, and runs
#     hack/release/testdata/consumer's test with -race: the README's RunTaintEviction on a
#     fake clientset evicts the pod that does not tolerate a taint.
#  4. `go mod graph` of the adapters module, resolved as a consumer resolves it, must name
#     neither controller-runtime nor envtest.
#  4b. A module outside the repository that imports only the core (then only clientgo)
#     has no k8s.io or sigs.k8s.io module above the stated floor (README.md, "Versions"):
#     the one an empty module requiring the floor has.
#  5. In another fresh module, hack/release/testdata/operator's main.go, a controller-runtime
#     operator of under 60 lines, requires only the controllerruntime module at that
#     version, builds and vets, and its test runs it on a real kube-apiserver and etcd
#     (KUBEBUILDER_ASSETS, made with hack/kube-assets.sh when unset) and sees it evict.
#  6. `go install github.com/taintevict/taintevict/examples/controller@VERSION`, which
#     refuses a module with replace directives, builds the command, and it runs (-h); the
#     same for the kubectl plugin, examples/kubectl-taintevict (--help).
#
# It fails if a module requires a version that cannot be resolved, if the README's lines or
# snippets do not build, or if the test fails. Third-party modules come from the module
# cache when it has them, else from the usual GOPROXY. KEEP=1 keeps the temporary folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

core=github.com/taintevict/taintevict
version=$(GOWORK=off go mod edit -json clientgo/go.mod |
  awk -v core="$core" '$1 == "\"Path\":" && $2 == "\"" core "\"," { getline; gsub(/[",]/, "", $2); print $2; exit }')
if [ -z "$version" ]; then
  echo "release-check: clientgo/go.mod does not require $core" >&2
  exit 1
fi
echo "release-check: version $version"

# 1. One version everywhere.
bad=0
while IFS= read -r mod; do
  while read -r path v; do
    if [ "$v" != "$version" ]; then
      echo "release-check: $mod requires $path $v, want $version" >&2
      bad=1
    fi
  done < <(GOWORK=off go mod edit -json "$mod" |
    awk -v core="$core" '$1 == "\"Path\":" { p = $2; gsub(/[",]/, "", p) } $1 == "\"Version\":" && (p == core || index(p, core "/") == 1) { v = $2; gsub(/[",]/, "", v); print p, v }' |
    sort -u)
done < <(git ls-files '*go.mod')
while IFS= read -r line; do
  case "$line" in
  *"@$version"|*"@$version "*) ;;
  *) echo "release-check: a go get line names another version than $version: $line" >&2; bad=1 ;;
  esac
done < <(git grep -h -o -E "go (get|run) [^\`]*$core[^\` ]*" -- '*README.md' || true)
[ "$bad" = 0 ] || exit 1

tmp=$(mktemp -d)
cleanup() {
  if [ "${KEEP:-}" = 1 ]; then
    echo "release-check: kept $tmp" >&2
  else
    # The module cache is read-only; the go command empties it.
    [ -d "$tmp/modcache" ] && GOMODCACHE="$tmp/modcache" go clean -modcache >/dev/null 2>&1 || true
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

# 2. The proxy folder.
(cd hack/release && go run . -version "$version" -out "$tmp/proxy" "$root" "$root/clientgo" "$root/clientgo/device" "$root/controllerruntime" "$root/examples/controller" "$root/examples/kubectl-taintevict")

# 3. A consumer.
cache_proxy="file://$(go env GOMODCACHE)/cache/download"
export GOWORK=off GOFLAGS="-mod=mod -trimpath" GOMODCACHE="$tmp/modcache" GOBIN="$tmp/bin"
export GOPROXY="file://$tmp/proxy,$cache_proxy,$(go env GOPROXY)"
export GONOSUMDB=$core GOPRIVATE= GONOPROXY=
consumer="$tmp/consumer"
mkdir -p "$consumer"
cd "$consumer"
go mod init example.com/consumer >/dev/null 2>&1

# The README's marked blocks: go-get's lines, and file NAME's Go source.
awk -v dir="$consumer" '
  /^<!-- release-check: / { mark = $3; name = $4; next }
  mark != "" && /^```/ && !inblock { inblock = 1; n++; next }
  inblock && /^```/ { inblock = 0; mark = ""; next }
  inblock && mark == "go-get" { print > (dir "/go-get.txt"); next }
  inblock && mark == "go-run" { print > (dir "/go-run.txt"); next }
  inblock && mark == "file" { print > (dir "/" name); next }
' "$root/README.md"
if [ ! -s go-get.txt ]; then
  echo "release-check: README.md has no block marked <!-- release-check: go-get -->" >&2
  exit 1
fi
while IFS= read -r line; do
  case "$line" in
  "" | "#"*) continue ;;
  "go get "*) ;;
  *) echo "release-check: README.md's go-get block has a line that is not a go get: $line" >&2; exit 1 ;;
  esac
  echo "release-check: $line"
  # The line's words, as the README shows them; nothing else is run.
  read -r -a words <<<"$line"
  "${words[@]}"
done < go-get.txt
rm go-get.txt
# The demo's go run line, from anywhere: its words before a comment.
if [ ! -s go-run.txt ]; then
  echo "release-check: README.md has no block marked <!-- release-check: go-run -->" >&2
  exit 1
fi
while IFS= read -r line; do
  line=${line%%#*}
  case "$line" in
  "" | " "*) continue ;;
  "go run $core/"*"@$version"*) ;;
  *) echo "release-check: README.md's go-run block has a line that is not a go run of ours at $version: $line" >&2; exit 1 ;;
  esac
  echo "release-check: $line"
  read -r -a words <<<"$line"
  if ! out=$("${words[@]}" 2>&1); then
    echo "release-check: $line failed: $out" >&2
    exit 1
  fi
done < go-run.txt
rm go-run.txt
snippets=$(ls ./*.go 2>/dev/null || true)
if [ -z "$snippets" ]; then
  echo "release-check: README.md has no Go block marked <!-- release-check: file NAME -->" >&2
  exit 1
fi
echo "release-check: README.md's snippets: $(echo $snippets)"
cp "$root"/hack/release/testdata/consumer/*_test.go .
go build ./...
go vet ./...
go test -race -count=1 -timeout 30m ./...
echo "release-check: the consumer's requirements:"
go list -m all | grep "^$core" | sed 's/^/  /'

# 4. The adapters module's graph, as a consumer resolves it.
mkdir "$tmp/adapters"
cp "$root/clientgo/go.mod" "$root/clientgo/go.sum" "$tmp/adapters/"
if (cd "$tmp/adapters" && go mod graph) | grep -E 'controller-runtime|envtest'; then
  echo "release-check: the adapters module's graph names controller-runtime or envtest (above)" >&2
  exit 1
fi
echo "release-check: the adapters module's graph has no controller-runtime and no envtest"

# 4b. A program on the oldest Kubernetes modules supported. For the core and for clientgo
# (the node side), a module outside the repository that imports only that module: its
# build list must hold no k8s.io or sigs.k8s.io module above the floor world, what an empty
# module that requires the floor (the k8s.io modules the library's go.mod requires directly,
# at their versions) has. Adding the library lifts nothing of a program on that release.
floor_check() {
  local dir=$1 mod=$2 pkg=$3
  local direct
  direct=$(GOWORK=off go mod edit -json "$root/$dir/go.mod" | awk '
    $1 == "\"Path\":" { p = $2; gsub(/[",]/, "", p); v = ""; ind = 0 }
    $1 == "\"Version\":" { v = $2; gsub(/[",]/, "", v) }
    $1 == "\"Indirect\":" { ind = 1 }
    $1 ~ /^}/ { if (p ~ /^k8s\.io\// && v ~ /^v0\.[0-9]+\.[0-9]+$/ && !ind) print p "@" v; p = "" }
  ' | sort -u)
  local world="$tmp/floor-${dir//\//-}" user="$tmp/user-${dir//\//-}"
  mkdir -p "$world" "$user"
  (
    cd "$user"
    go mod init example.com/user >/dev/null 2>&1
    go get "$mod@$version" >/dev/null 2>&1
    printf 'package main\n\nimport _ "%s"\n\nfunc main() {}\n' "$pkg" >main.go
    go build -o /dev/null . && go mod tidy >/dev/null 2>&1
    go list -m all | awk 'NR > 1 && ($1 ~ /^k8s\.io\// || $1 ~ /^sigs\.k8s\.io\//) && NF == 2'
    # The Kubernetes packages it builds with, for the floor world to import too.
    go list -deps . | grep -E '^(k8s\.io|sigs\.k8s\.io)/' | grep -Ev '/internal(/|$)' >"$tmp/k8s-packages.txt"
  ) >"$tmp/user.txt"
  # The floor world: a program on the floor's modules that imports the same Kubernetes
  # packages, so that its build list holds what they need (kube-openapi's own requirements,
  # say) at the floor's versions.
  (
    cd "$world"
    go mod init example.com/floor >/dev/null 2>&1
    go get $direct >/dev/null 2>&1
    { printf 'package main\n\nimport (\n'; sed 's/.*/\t_ "&"/' "$tmp/k8s-packages.txt"; printf ')\n\nfunc main() {}\n'; } >main.go
    go mod tidy >/dev/null 2>&1
    go list -m all | awk 'NR > 1'
  ) >"$tmp/world.txt"
  local bad=0 p v w
  while read -r p v; do
    w=$(awk -v p="$p" '$1 == p { print $2 }' "$tmp/world.txt")
    if [ -z "$w" ] || [ "$v" != "$w" ]; then
      echo "release-check: a program that imports only $pkg has $p $v, where the floor ($(echo $direct)) has ${w:-none}" >&2
      bad=1
    fi
  done <"$tmp/user.txt"
  [ "$bad" = 0 ] || exit 1
  echo "release-check: a program that imports only $pkg: its k8s.io modules are the floor's ($(echo $direct))"
}
floor_check . "$core" "$core/eviction"
floor_check clientgo "$core/clientgo" "$core/clientgo"

# 5. A controller-runtime operator, hack/release/testdata/operator, written as a user outside
# the repository writes one: it requires the adapter module alone, has under 60 lines, and
# its test runs it on a real kube-apiserver and etcd (KUBEBUILDER_ASSETS) and sees it evict.
operator="$tmp/operator"
mkdir "$operator"
cp "$root"/hack/release/testdata/operator/*.go "$operator/"
lines=$(wc -l <"$operator/main.go")
if [ "$lines" -ge 60 ]; then
  echo "release-check: the operator's main.go has $lines lines, want under 60" >&2
  exit 1
fi
if [ -z "${KUBEBUILDER_ASSETS:-}" ]; then
  KUBEBUILDER_ASSETS=$(bash "$root/hack/kube-assets.sh" | tail -n 1)
  export KUBEBUILDER_ASSETS
fi
(
  cd "$operator"
  go mod init example.com/operator >/dev/null 2>&1
  echo "release-check: operator: go get $core/controllerruntime@$version"
  go get "$core/controllerruntime@$version"
  go mod tidy
  go vet ./...
  go test -race -count=1 -timeout 10m ./...
)
echo "release-check: a controller-runtime operator of $lines lines evicts with $core/controllerruntime@$version: ok"

# 6. The command, installed as a user would.
# CGO_ENABLED=0 -trimpath, as hack/image builds it: the two share their compiled packages.
CGO_ENABLED=0 go install "$core/examples/controller@$version"
if ! help=$("$GOBIN/controller" -h 2>&1) || ! grep -q -- '-kubeconfig' <<<"$help"; then
  echo "release-check: $core/examples/controller@$version installed, but its -h names no -kubeconfig: $help" >&2
  exit 1
fi
echo "release-check: go install $core/examples/controller@$version: ok"
CGO_ENABLED=0 go install "$core/examples/kubectl-taintevict@$version"
if ! help=$("$GOBIN/kubectl-taintevict" what-if --help 2>&1) || ! grep -q -- '--kubeconfig' <<<"$help"; then
  echo "release-check: $core/examples/kubectl-taintevict@$version installed, but its what-if --help names no --kubeconfig: $help" >&2
  exit 1
fi
echo "release-check: go install $core/examples/kubectl-taintevict@$version: ok"
echo "release-check: ok"
