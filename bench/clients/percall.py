"""A per-call timing loop for bench/clients.ts: N keyed enqueues in all, each caller (a thread) one
at a time, on a pool with one connection per caller.

    DATABASE_URL=... /usr/bin/python3 bench/clients/percall.py <calls> <key prefix> [callers, default 1] [async]

With ``async``: ``workhorse.aio.Queue`` over an AsyncConnectionPool, the callers being tasks on one
event loop.

Prints one line of JSON: {"calls": N, "seconds": S}."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
import sys
import threading
import time

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdk" / "python"))

from psycopg_pool import ConnectionPool  # noqa: E402

from workhorse import EnqueueOptions, Idempotency, Queue  # noqa: E402


def payload_of(key: str) -> dict[str, object]:
    return {"invoiceId": f"INV-{key}", "amount": 4200, "currency": "EUR", "customer": f"cus_{key}", "lines": [1, 2, 3]}


async def main_async(calls: int, prefix: str, callers: int) -> None:
    from psycopg_pool import AsyncConnectionPool

    from workhorse import aio

    size = max(2, callers)
    async with AsyncConnectionPool(os.environ["DATABASE_URL"], min_size=size, max_size=size) as pool:
        queue = aio.Queue(pool)

        async def enqueue(i: int) -> None:
            key = f"{prefix}-{i}"
            await queue.enqueue("invoice.capture", payload_of(key), EnqueueOptions(queue="billing", idempotency=Idempotency(key=key, scope="invoice-capture")))

        await enqueue(-1)
        numbers = iter(range(calls))

        async def caller() -> None:
            for i in numbers:
                await enqueue(i)

        start = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(callers)))
        print(json.dumps({"calls": calls, "seconds": time.perf_counter() - start}))
        await queue.close()


def main() -> None:
    calls, prefix = int(sys.argv[1]), sys.argv[2]
    callers = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    if len(sys.argv) > 4 and sys.argv[4] == "async":
        asyncio.run(main_async(calls, prefix, callers))
        return
    size = max(2, callers)
    with ConnectionPool(os.environ["DATABASE_URL"], min_size=size, max_size=size, open=True) as pool:
        queue = Queue(pool)

        def enqueue(i: int) -> None:
            key = f"{prefix}-{i}"
            payload = {"invoiceId": f"INV-{key}", "amount": 4200, "currency": "EUR", "customer": f"cus_{key}", "lines": [1, 2, 3]}
            queue.enqueue("invoice.capture", payload, EnqueueOptions(queue="billing", idempotency=Idempotency(key=key, scope="invoice-capture")))

        enqueue(-1)  # warm-up: the pool's connection, the installation key
        numbers = iter(range(calls))
        lock = threading.Lock()

        def caller() -> None:
            while True:
                with lock:
                    i = next(numbers, None)
                if i is None:
                    return
                enqueue(i)

        threads = [threading.Thread(target=caller) for _ in range(callers)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(json.dumps({"calls": calls, "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    main()
