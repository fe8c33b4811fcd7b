"""The invoice-capture example of `npm run example`, from Python.

    DATABASE_URL=postgresql://... /usr/bin/python3 sdk/python/examples/invoice.py

The database must have the Workhorse schema (the TypeScript core's migrate(): `npm run example`
once, or `DATABASE_URL=... npx tsx sdk/python/tests/ts/migrate.ts`).
"""

from __future__ import annotations

import os
from pathlib import Path
import sys
import time

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from psycopg_pool import ConnectionPool  # noqa: E402

from workhorse import EnqueueIdempotencyConflictError, EnqueueOptions, Idempotency, Queue  # noqa: E402


def main() -> int:
    with ConnectionPool(os.environ["DATABASE_URL"], min_size=1, max_size=4) as pool:
        queue = Queue(pool, source="example")
        invoice_id = f"INV-{time.time_ns() // 1_000_000}"
        options = EnqueueOptions(
            queue="billing",
            idempotency=Idempotency(key=f"capture:{invoice_id}", scope="invoice-capture", ttl_ms=86_400_000),
        )
        first = queue.enqueue_with_result("invoice.capture", {"invoiceId": invoice_id, "amountCents": 4200}, options)
        print(f"{f'1. enqueue the capture of {invoice_id}:':<48}{first.outcome} job {first.job_id}")
        again = queue.enqueue_with_result("invoice.capture", {"amountCents": 4200, "invoiceId": invoice_id}, options)
        print(f"{'2. the same request again (client retry):':<48}{again.outcome} job {again.job_id}")
        try:
            queue.enqueue("invoice.capture", {"invoiceId": invoice_id, "amountCents": 9900}, options)
            print("3. unexpected: a different amount was accepted")
            return 1
        except EnqueueIdempotencyConflictError as err:
            print(
                f"{'3. same key, different amount:':<48}conflict with job {err.existing_job_id}: "
                f"fields [{', '.join(err.conflicting_fields)}], payload paths [{', '.join(err.payload_paths or [])}], "
                f"key {err.key_preview} (digest {err.key_digest})"
            )
        assert isinstance(options.idempotency, Idempotency)
        binding = queue.find_binding(options.idempotency.key, scope=options.idempotency.scope)
        assert binding is not None
        print(
            f"{'4. the binding:':<48}scope {binding.scope}, key {binding.key_preview} ({binding.key_length} chars, "
            f"digest {binding.key_digest}), expires {binding.expires_at.isoformat()}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
