"""docs/clients.md's "Start here" walk-through, run as written: its Python block is extracted from
the page and executed against the test database (with an `orders` table, and the worker's blocking
``run()`` replaced by a start, a wait for the job and a stop), so the page cannot drift from the API."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
import re
import time
from typing import Any

from psycopg_pool import ConnectionPool
import pytest

import workhorse

DOC = Path(__file__).resolve().parents[3] / "docs" / "clients.md"


def start_here_block() -> str:
    section = DOC.read_text(encoding="utf-8").split("### Start here", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the walk-through has one Python block"
    return blocks[0]


def test_the_start_here_walk_through_runs_as_written(
    database_url: str, pool: ConnectionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pool.connection() as conn:
        conn.execute("create table if not exists orders (id integer primary key)")
        conn.execute("delete from orders where id = 42")
        # A run before this one: its job goes, and with it (the job_deleted trigger) its key.
        conn.execute("delete from workhorse.job where type = 'order.place' and payload = '{\"order\": 42}'::jsonb")

    def run_until_the_job_is_done(self: workhorse.Worker, *args: Any, **kwargs: Any) -> None:
        self.start()
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                with pool.connection() as conn:
                    row = conn.execute(
                        "select state from workhorse.job where queue = 'billing' and type = 'order.place' "
                        "and payload = '{\"order\": 42}'::jsonb order by id desc limit 1"
                    ).fetchone()
                if row and row[0] == "succeeded":
                    return
                time.sleep(0.05)
            raise AssertionError("the walk-through's job did not succeed")
        finally:
            self.stop(grace_ms=1000)

    monkeypatch.setattr(workhorse.Worker, "run", run_until_the_job_is_done)
    monkeypatch.setenv("DATABASE_URL", database_url)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(start_here_block(), str(DOC), "exec"), {"__name__": "walkthrough", "os": os})
    assert out.getvalue().strip() == "['payload'] ['$.order']"


# Every other Python block of the Python pages, run as written: each page's blocks in order, in one
# namespace (a page may continue an earlier block, as sdk/python/README.md's "Work" uses "Enqueue"'s
# pool). A worker's blocking run() starts the worker and stops it.
PAGES = [DOC, DOC.parents[1] / "sdk" / "python" / "README.md"]


def python_blocks(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    if page == DOC:
        text = text.replace(start_here_block(), "", 1)  # run with its own checks above
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_python_block_runs_as_written(page: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = python_blocks(page)
    assert blocks, f"{page} has no Python block"

    def start_and_stop(self: workhorse.Worker, *args: Any, **kwargs: Any) -> None:
        self.start()
        self.stop(grace_ms=1000)  # waits for any job it claimed

    monkeypatch.setattr(workhorse.Worker, "run", start_and_stop)
    monkeypatch.setenv("DATABASE_URL", database_url)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for i, block in enumerate(blocks, 1):
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(compile(block, f"{page.name}, Python block {i}", "exec"), namespace)
            except Exception as err:
                raise AssertionError(f"{page.name}, Python block {i} fails as written: {err!r}\n{block}") from err
