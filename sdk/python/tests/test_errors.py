"""Error messages read as TypeScript's (lib/enqueue/errors.ts): the verb agrees with the fields named."""

from __future__ import annotations

import pytest

from workhorse.errors import EnqueueIdempotencyConflictError


def conflict(fields: list[str]) -> EnqueueIdempotencyConflictError:
    return EnqueueIdempotencyConflictError(
        existing_job_id="01900000-0000-7000-8000-000000000000",
        scope="s",
        key_preview="ke…",
        key_digest="0123456789ab",
        key_length=3,
        existing_mode="idempotency",
        conflicting_fields=fields,
        stored_request_digest="a" * 64,
        rejected_request_digest="b" * 64,
        ordinal=1,
    )


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        (["payload"], "payload differs."),
        (["payload", "type"], "payload and type differ."),
        (["maxAttempts", "payload", "type"], "maxAttempts, payload and type differ."),
    ],
)
def test_a_conflict_says_which_fields_differ_in_words_that_agree(fields: list[str], words: str) -> None:
    assert f"with a different request: {words} " in str(conflict(fields))
