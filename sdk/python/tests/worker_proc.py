"""A worker in its own process, for the tests that kill or signal one. argv[1] is JSON:
{"url", "queue", "mode": "checkpoint_then_block" | "drain", "lease_ms", "grace_ms"}. It prints one
line per step (flushed) so the test waits for steps instead of sleeping."""

from __future__ import annotations

import json
from pathlib import Path
import sys
import threading
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from psycopg_pool import ConnectionPool  # noqa: E402

from workhorse import JobContext, Worker  # noqa: E402


_out = threading.Lock()


def say(line: str) -> None:
    """One whole line at a time (print() writes the text and the newline separately: threads interleave)."""
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def main() -> None:
    cfg = json.loads(sys.argv[1])
    pool = ConnectionPool(cfg["url"], min_size=1, max_size=4, open=True)
    forever = threading.Event()

    def checkpoint_then_block(payload: Any, ctx: JobContext) -> Any:
        ctx.checkpoint("charge", lambda: {"chargeId": f"ch-{payload['n']}", "attempt": ctx.attempt})
        say(f"checkpointed {ctx.job_id}")
        forever.wait()  # until SIGKILL

    def finishes_when_told(payload: Any, ctx: JobContext) -> Any:
        say(f"started {ctx.job_id}")
        _wait_for_file(Path(payload["release"]), ctx)
        return {"finished": True}

    def waits_for_stop(payload: Any, ctx: JobContext) -> Any:
        say(f"started {ctx.job_id}")
        ctx.stopped.wait()
        say(f"stop signal {type(ctx.stop_reason).__name__} {getattr(ctx.stop_reason, 'grace_ms', None)}")
        ctx.raise_if_stopped()

    handlers = (
        {"t.block": checkpoint_then_block}
        if cfg["mode"] == "checkpoint_then_block"
        else {"t.finish": finishes_when_told, "t.stop": waits_for_stop}
    )
    worker = Worker(pool, handlers, queues=[cfg["queue"]], concurrency=3, lease_ms=cfg.get("lease_ms", 30_000),
                    poll_interval_ms=50, reap_interval_ms=0, abort_grace_ms=2000)  # fmt: skip

    def announce_stopping() -> None:
        while worker.state in ("idle", "running"):
            threading.Event().wait(0.005)
        say("stopping")

    threading.Thread(target=announce_stopping, daemon=True).start()
    say("ready")
    worker.run(grace_ms=cfg.get("grace_ms", 30_000))
    say(f"stopped {json.dumps(worker.stats().__dict__)}")
    pool.close()


def _wait_for_file(path: Path, ctx: JobContext) -> None:
    """Runs on through the stop signal: this handler finishes when the test says so, not before."""
    while not path.exists():
        threading.Event().wait(0.01)


if __name__ == "__main__":
    main()
