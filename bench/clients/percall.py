"""A per-call timing loop for bench/clients.ts: N keyed enqueues, one at a time, from one caller.

    DATABASE_URL=... /usr/bin/python3 bench/clients/percall.py <calls> <key prefix>

Prints one line of JSON: {"calls": N, "seconds": S}."""

from __future__ import annotations

import json
import os
from pathlib import Path
import sys
import time

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdk" / "python"))

from psycopg_pool import ConnectionPool  # noqa: E402

from workhorse import EnqueueOptions, Idempotency, Queue  # noqa: E402


def main() -> None:
    calls, prefix = int(sys.argv[1]), sys.argv[2]
    with ConnectionPool(os.environ["DATABASE_URL"], min_size=1, max_size=2, open=True) as pool:
        queue = Queue(pool)

        def enqueue(i: int) -> None:
            key = f"{prefix}-{i}"
            payload = {"invoiceId": f"INV-{key}", "amount": 4200, "currency": "EUR", "customer": f"cus_{key}", "lines": [1, 2, 3]}
            queue.enqueue("invoice.capture", payload, EnqueueOptions(queue="billing", idempotency=Idempotency(key=key, scope="invoice-capture")))

        enqueue(-1)  # warm-up: the pool's connection, the installation key
        start = time.perf_counter()
        for i in range(calls):
            enqueue(i)
        print(json.dumps({"calls": calls, "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    main()
