#!/usr/bin/env bash
# Runs the go tool in module mode without the network. Every requirement in go.mod is built from
# Debian's copy of that module in /usr/share/gocode/src (golang-github-jackc-pgx-v4-dev and the
# packages it depends on), and Debian's version of it must be the version go.mod requires. The go
# tool reads a generated copy of go.mod (-modfile) that adds one line per requirement,
# `replace <module> => /usr/share/gocode/src/<module>`: go.mod itself is not changed, nothing is
# downloaded (GOPROXY=off) and no go.sum is read or written (a directory replacement has none).
#
#   sdk/go/gomod.sh vet ./...
#   sdk/go/gomod.sh test -count=1 ./...
#   sdk/go/gomod.sh build -o /tmp/percall ./examples/percall
#   sdk/go/gomod.sh -C ~/orders deps                # your module (it requires workhorse, replaced by
#   sdk/go/gomod.sh -C ~/orders build -o orders .   # a checkout's sdk/go): `deps` writes workhorse's
#                                                   # requirements into its go.mod, as `go mod tidy`
#                                                   # would with the module proxy; then build offline
#
# The go command runs in the module's directory (sdk/go, or the -C directory). The build cache is
# sdk/go/.cache/go-build (git-ignored) unless GOCACHE is set.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
gocode=/usr/share/gocode/src
die() { echo "gomod.sh: $*" >&2; exit 2; }

dir="$here"
if [ "${1:-}" = "-C" ]; then
  [ $# -ge 2 ] || die "-C needs a directory"
  dir="$(cd "$2" && pwd)"
  shift 2
fi
[ $# -gt 0 ] || { sed -n '2,18p' "$0" >&2; exit 2; }
[ -f "$dir/go.mod" ] || die "no go.mod in $dir"

# "require <path> <version>" and "replace <path>" lines from a go.mod (the first argument).
directives() {
  go mod edit -print "$1" | awk '
    ($1 == "require" || $1 == "replace") && $2 == "(" { block = $1; next }
    $1 == ")" { block = ""; next }
    $1 == "require" { print "require", $2, $3; next }
    $1 == "replace" { print "replace", $2; next }
    block == "require" && NF >= 2 { print "require", $1, $2 }
    block == "replace" && NF >= 2 { print "replace", $1 }'
}

# deps: the requirements of this module (sdk/go/go.mod), written into the other module's go.mod.
if [ "$1" = deps ]; then
  [ "$dir" != "$here" ] || die "deps writes workhorse's requirements into your module: give it with -C <dir>"
  [ $# -eq 1 ] || die "deps takes no arguments"
  reqs=()
  while read -r kind path version; do
    [ "$kind" = require ] && reqs+=("-require=$path@$version")
  done < <(directives "$here/go.mod")
  [ ${#reqs[@]} -gt 0 ] || die "no requirements read from $here/go.mod"
  (cd "$dir" && GOFLAGS=-mod=mod go mod edit "${reqs[@]}")
  printf 'gomod.sh: %s requires %d modules for workhorse:\n' "$dir/go.mod" "${#reqs[@]}"
  printf '  %s\n' "${reqs[@]#-require=}"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/workhorse-gomod-XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp "$dir/go.mod" "$work/go.mod"

declare -A replaced=()
paths=() versions=()
while read -r kind path version; do
  if [ "$kind" = replace ]; then replaced[$path]=1; else paths+=("$path") versions+=("$version"); fi
done < <(directives "$work/go.mod")

# Each requirement the module does not replace itself comes from Debian, at the required version.
srcs=() want=()
for i in "${!paths[@]}"; do
  path="${paths[$i]}"
  [ -z "${replaced[$path]:-}" ] || continue
  src="$gocode/$path"
  [ -f "$src/go.mod" ] || die "$path ${versions[$i]}: Debian's copy is missing ($src/go.mod; install the golang-*-dev package that ships it)"
  declared="$(awk '$1 == "module" { print $2; exit }' "$src/go.mod")"
  [ "$declared" = "$path" ] || die "$src/go.mod declares module $declared, not $path"
  srcs+=("$src")
  want+=("$path ${versions[$i]}")
done

# Debian's version of a copy ("1:0.4.0-1", "4.15.0-4", "0.0~git20200714.2b9c447-2") against the
# module version go.mod requires ("v0.4.0", "v4.15.0", "v0.0.0-20200714003250-2b9c44734f2b").
same_version() {
  local go="${1#v}" deb="${2#*:}"
  go="${go%+incompatible}"
  deb="${deb%-*}"
  deb="${deb%%+*}"
  if [[ "$go" =~ [.-]([0-9]{8})[0-9]{6}-([0-9a-f]{12})$ ]]; then
    local day="${BASH_REMATCH[1]}" commit="${BASH_REMATCH[2]}"
    [[ "$deb" =~ git([0-9]{8})\.([0-9a-f]+)$ ]] && [ "${BASH_REMATCH[1]}" = "$day" ] &&
      [ "${commit#"${BASH_REMATCH[2]}"}" != "$commit" ]
  else
    [ "$go" = "$deb" ]
  fi
}
replaces=()
if [ ${#srcs[@]} -gt 0 ]; then
  declare -A owner=() debver=()
  while IFS= read -r line; do
    owner[${line#*: }]="${line%%: *}"
  done < <(dpkg -S "${srcs[@]}" 2>/dev/null || true)
  while read -r pkg ver; do debver[$pkg]="$ver"; done < <(dpkg-query -W -f '${Package} ${Version}\n' 2>/dev/null)
  for i in "${!srcs[@]}"; do
    src="${srcs[$i]}" path="${want[$i]% *}" version="${want[$i]#* }"
    pkg="${owner[$src]:-}"
    [ -n "$pkg" ] && [[ "$pkg" != *,* ]] || die "$src belongs to no single Debian package (dpkg -S)"
    same_version "$version" "${debver[$pkg]:-}" ||
      die "go.mod requires $path $version, Debian's $pkg is ${debver[$pkg]:-not installed}"
    replaces+=("-replace=$path=$src")
  done
  go mod edit "${replaces[@]}" "$work/go.mod"
fi

cd "$dir"
export GO111MODULE=on GOWORK=off GOPROXY=off
export GOCACHE="${GOCACHE:-$here/.cache/go-build}"
cmd="$1"
shift
case "$cmd" in
  build | install | list | run | test | vet) go "$cmd" -modfile="$work/go.mod" -mod=readonly "$@" ;;
  *) go "$cmd" "$@" ;;
esac
