"""Fixtures: a PostgreSQL server (DATABASE_URL, or a throwaway Debian PostgreSQL cluster in a temp
dir), the schema migrated by the TypeScript core's migrate(), a pool and a Queue."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
import json
import os
import secrets
from pathlib import Path
import shutil
import socket
import subprocess
import sys
import tempfile
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402
from psycopg_pool import ConnectionPool  # noqa: E402

from workhorse import Queue  # noqa: E402

PG_BIN = Path(os.environ.get("WORKHORSE_PG_BIN", "/usr/lib/postgresql/15/bin"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    data: Path | None  # set when this run owns the cluster (it may then restart it)
    run_as: list[str]

    def pg_ctl(self, *args: str) -> None:
        assert self.data is not None
        subprocess.run([*self.run_as, str(PG_BIN / "pg_ctl"), "-D", str(self.data / "data"), *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def _as_postgres() -> list[str]:
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", "postgres", "--"]


def _fresh_database(url: str) -> Iterator[str]:
    """A new, empty database on the server `url` names, dropped afterwards: a run against a shared
    DATABASE_URL starts from no rows, however often it runs (the TypeScript suites do the same).

    The database `url` names need not exist: creating and dropping go through WORKHORSE_ADMIN_URL
    when it is set. With WORKHORSE_DISTRIBUTED=1 the database is left for the migrate step to create,
    which makes it a Citus database on the coordinator and every worker (test/client-schema.ts)."""
    name = f"workhorse_py_{secrets.token_hex(6)}"
    admin_url = os.environ.get("WORKHORSE_ADMIN_URL") or url
    distributed = os.environ.get("WORKHORSE_DISTRIBUTED") == "1"
    if not distributed:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    if os.environ.get("DATABASE_URL"):
        for url in _fresh_database(os.environ["DATABASE_URL"]):
            yield Server(url, None, [])
        return
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"no PostgreSQL at {PG_BIN} and no DATABASE_URL")
    tmp = Path(tempfile.mkdtemp(prefix="workhorse-py-pg-"))
    run_as = _as_postgres()
    if run_as:
        shutil.chown(tmp, "postgres")
    port = _free_port()
    subprocess.run([*run_as, str(PG_BIN / "initdb"), "-D", str(tmp / "data"), "-A", "trust", "-U", "postgres"],
                   check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    s = Server(f"postgresql://postgres@127.0.0.1:{port}/postgres", tmp, run_as)
    opts = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={tmp} -c max_connections=100"
    s.pg_ctl("-w", "-l", str(tmp / "log"), "-o", opts, "start")
    try:
        yield s
    finally:
        try:
            s.pg_ctl("-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def run_ts(script: str, url: str, arg: Any = None) -> Any:
    """Runs tests/ts/<script> with the TypeScript core (npx tsx) and returns the JSON it prints."""
    env = {**os.environ, "DATABASE_URL": url}
    out = subprocess.run(
        ["npx", "tsx", str(Path(__file__).parent / "ts" / script), json.dumps(arg)],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def migrate_as_the_docs_say(url: str) -> None:
    """The schema, by the one command every doc gives: ``npx workhorse migrate`` in the checkout."""
    env = {**os.environ, "DATABASE_URL": url}
    subprocess.run(["npx", "workhorse", "migrate"], cwd=ROOT, env=env, check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def database_url(server: Server) -> str:
    if os.environ.get("WORKHORSE_DISTRIBUTED") == "1":
        run_ts("migrate.ts", server.url)  # makes the Citus database first, then the distributed layout
    else:
        migrate_as_the_docs_say(server.url)
    return server.url


@pytest.fixture(scope="session")
def pool(database_url: str) -> Iterator[ConnectionPool]:
    p = ConnectionPool(database_url, min_size=1, max_size=8, timeout=30, open=True)
    try:
        yield p
    finally:
        p.close()


@pytest.fixture
def queue(pool: ConnectionPool) -> Queue:
    return Queue(pool)
