#!/usr/bin/env bash
# A throwaway Citus cluster on loopback: one coordinator and N workers (default 2), each its own
# PostgreSQL 15 in a temp directory owned by `postgres`, on free ports.
#
#   scripts/citus-cluster.sh start [workers]   prints `export ...` lines (eval them): CITUS_CLUSTER_DIR,
#                                              DATABASE_URL (the coordinator), WORKHORSE_DISTRIBUTED=1
#   scripts/citus-cluster.sh stop [dir]        stops every node and removes the directory
#   scripts/citus-cluster.sh install           unpacks Citus into Debian's PostgreSQL 15 if it is missing
#
# Nodes run with fsync off (tests); WORKHORSE_CITUS_DURABLE=1 keeps PostgreSQL's durable defaults.
#
# Citus comes from WORKHORSE_CITUS_DIR, else a shared/citus folder next to the checkout or next to
# its parent, else the machine-wide /work/shared/citus (a directory with install.sh and the tarball).
# Run as root (it switches to postgres).
set -euo pipefail
B=/usr/lib/postgresql/15/bin
here=$(cd "$(dirname "$0")/.." && pwd)

citus_dir() {
  local up; up=$(dirname "$here")
  for d in "${WORKHORSE_CITUS_DIR:-}" "$up/shared/citus" "$(dirname "$up")/shared/citus" /work/shared/citus; do
    if [ -n "$d" ] && [ -x "$d/install.sh" ]; then (cd "$d" && pwd); return 0; fi
  done
  echo "citus-cluster: no Citus found (set WORKHORSE_CITUS_DIR to a folder with install.sh)" >&2
  return 1
}

install_citus() {
  # This Citus build links against a symbol PostgreSQL 15 exports from 15.20 on: upgrade older minors.
  if [ ! -x "$B/postgres" ] || ! grep -q have_createdb_privilege "$B/postgres"; then
    echo "citus-cluster: installing Debian's current postgresql-15 (Citus needs 15.20 or later)" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -q && apt-get install -y -q postgresql-15; } >&2
  fi
  if [ ! -f /usr/lib/postgresql/15/lib/citus.so ]; then
    local d; d=$(citus_dir)
    bash "$d/install.sh" >&2
  fi
}

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

psql_at() { local port=$1; shift; su postgres -c "$B/psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $port -U postgres -d postgres $(printf '%q ' "$@")"; }

start() {
  local workers=${1:-2}
  install_citus
  local dir; dir=$(mktemp -d /tmp/workhorse-citus-XXXXXX)
  chown postgres "$dir"
  # A start that fails half way stops what it started.
  trap 'stop "'"$dir"'" >&2' ERR
  local ports=()
  for i in $(seq 0 "$workers"); do
    local n="node$i" port; port=$(free_port)
    ports+=("$port")
    su postgres -c "$B/initdb -D $dir/$n -A trust -U postgres >/dev/null"
    cat >>"$dir/$n/postgresql.conf" <<CONF
shared_preload_libraries = 'citus'
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 300
max_prepared_transactions = 200
citus.shard_count = 8
citus.enable_create_database_propagation = on
citus.max_cached_conns_per_worker = 4
CONF
    # Tests need no durability; WORKHORSE_CITUS_DURABLE=1 (the bench) keeps PostgreSQL's defaults.
    if [ "${WORKHORSE_CITUS_DURABLE:-0}" != 1 ]; then
      printf 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n' >>"$dir/$n/postgresql.conf"
    fi
    su postgres -c "$B/pg_ctl -D $dir/$n -w -l $dir/$n.log start >/dev/null"
    echo "$port" >"$dir/$n.port"
  done
  for i in $(seq 1 "$workers"); do psql_at "${ports[$i]}" -c "create extension citus"; done
  psql_at "${ports[0]}" -c "create extension citus" -c "select citus_set_coordinator_host('127.0.0.1', ${ports[0]})" >/dev/null
  for i in $(seq 1 "$workers"); do psql_at "${ports[0]}" -c "select citus_add_node('127.0.0.1', ${ports[$i]})" >/dev/null; done
  trap - ERR
  echo "export CITUS_CLUSTER_DIR=$dir"
  echo "export DATABASE_URL=postgres://postgres@127.0.0.1:${ports[0]}/postgres"
  echo "export WORKHORSE_DISTRIBUTED=1"
}

stop() {
  local dir=${1:-${CITUS_CLUSTER_DIR:-}}
  [ -n "$dir" ] && [ -d "$dir" ] || { echo "citus-cluster: no cluster directory given" >&2; exit 1; }
  for d in "$dir"/node*/; do su postgres -c "$B/pg_ctl -D $d -m fast stop" >/dev/null 2>&1 || true; done
  rm -rf "$dir"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  install) install_citus ;;
  *) echo "usage: $0 start [workers] | stop [dir] | install" >&2; exit 2 ;;
esac
