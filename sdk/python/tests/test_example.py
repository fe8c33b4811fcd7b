"""examples/invoice.py prints what `npm run example` prints: accepted, replayed (same id), the conflict naming payload."""

from __future__ import annotations

import os
from pathlib import Path
import re
import subprocess
import sys


def test_invoice_example(database_url: str) -> None:
    example = Path(__file__).parents[1] / "examples" / "invoice.py"
    out = subprocess.run([sys.executable, str(example)], env={**os.environ, "DATABASE_URL": database_url},
                         check=True, capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    lines = out.splitlines()
    job = re.search(r"accepted job (\S+)$", lines[0])
    assert job, out
    assert lines[1].endswith(f"replayed job {job.group(1)}")
    assert f"conflict with job {job.group(1)}: fields [payload], payload paths [$.amountCents], key capture:…" in lines[2]
    assert lines[3].startswith("4. the binding:") and "scope invoice-capture" in lines[3]
