"""Completions written as the TypeScript worker writes them: one ``complete_jobs`` statement in
flight at a time, carrying every success that finished meanwhile. If PostgreSQL refuses a batch
(not a lost connection, which ``persist`` retries), each job is written alone, so one bad row costs
no other job anything."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
import threading
from typing import Any

from ._calls import is_retryable
from .worker_types import ClaimedJob

_BATCH = 500

#: What became of one completion: recorded, fenced out (``"stale"``), or the error PostgreSQL refused it with.
CompleteOutcome = str | BaseException


@dataclass(eq=False)
class _Pending:
    job: ClaimedJob
    text: str
    done: threading.Event = field(default_factory=threading.Event)
    outcome: CompleteOutcome = "stale"

    def resolve(self, outcome: CompleteOutcome) -> None:
        self.outcome = outcome
        self.done.set()


class CompletionWriter:
    def __init__(
        self,
        write: Callable[[list[tuple[ClaimedJob, str]]], set[str]],
        persist: Callable[[Callable[[], Any]], Any],
        report: Callable[[BaseException], None],
    ):
        self._write = write
        self._persist = persist
        self._report = report
        self._cond = threading.Condition()
        self._queue: list[_Pending] = []
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="workhorse-complete", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Writes what is queued, then ends the writer thread."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join()

    def complete(self, job: ClaimedJob, text: str) -> CompleteOutcome:
        """Queues a result (JSON text) and waits for what became of its write."""
        p = _Pending(job, text)
        with self._cond:
            if self._closing:
                p.resolve("stale")  # unreachable while attempts run: the worker closes this after they end
                return p.outcome
            self._queue.append(p)
            self._cond.notify_all()
        p.done.wait()
        return p.outcome

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return
                batch, self._queue = self._queue[:_BATCH], self._queue[_BATCH:]
            try:
                self._drain(batch)
            except BaseException as err:  # never leave an attempt waiting for an answer
                self._report(err)
                for p in batch:
                    if not p.done.is_set():
                        p.resolve("stale")

    def _once(self, batch: list[_Pending]) -> set[str]:
        return self._persist(lambda: self._write([(p.job, p.text) for p in batch]))  # type: ignore[no-any-return]

    def _drain(self, batch: list[_Pending]) -> None:
        try:
            recorded = self._once(batch)
            for p in batch:
                p.resolve("recorded" if p.job.id in recorded else "stale")
            return
        except Exception as err:
            if len(batch) == 1 or is_retryable(err):
                self._report(err)
                for p in batch:
                    p.resolve(err if len(batch) == 1 and not is_retryable(err) else "stale")
                return
        for p in batch:
            try:
                recorded = self._once([p])
                p.resolve("recorded" if p.job.id in recorded else "stale")
            except Exception as one:
                self._report(one)
                p.resolve("stale" if is_retryable(one) else one)
