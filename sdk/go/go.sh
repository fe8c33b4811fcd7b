#!/usr/bin/env bash
# Runs the go tool on this package in GOPATH mode (no module proxy needed): Debian's pgx v4 from
# /usr/share/gocode, and this directory importable as "workhorse" through .gopath/src/workhorse, a
# symlink made here. Usage: sdk/go/go.sh test -v ./...   (arguments are passed to `go`).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$here/.gopath/src"
ln -sfn "$here" "$here/.gopath/src/workhorse"
export GO111MODULE=off GOPATH="/usr/share/gocode:$here/.gopath" GOFLAGS="${GOFLAGS:-}"
export GOCACHE="${GOCACHE:-$here/.gopath/cache}"
cd "$here/.gopath/src/workhorse"
export PWD="$here/.gopath/src/workhorse"
exec go "$@"
