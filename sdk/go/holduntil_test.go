package workhorse

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Key lifetimes (docs/enqueue.md, "Key lifetimes"): held while the job is pending or running, free
// once the SQL that ends it (the same for every client's worker) has released it.
func TestHoldUntilFinishedReplaysUntilTheJobFinishes(t *testing.T) {
	q, pool := newTestQueue(t)
	ctx := context.Background()
	queue := unique("hold")
	opts := EnqueueOptions{Queue: Ptr(queue), Idempotency: &Idempotency{Key: unique("report"), Scope: Ptr("reports"), HoldUntil: Ptr(HoldUntilFinished)}}
	first, err := q.EnqueueWithResult(ctx, "report.nightly", map[string]int{"day": 1}, opts)
	if err != nil || first.Outcome != Accepted {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := q.EnqueueWithResult(ctx, "report.nightly", map[string]int{"day": 1}, opts)
	if err != nil || again.Outcome != Replayed || again.JobID != first.JobID {
		t.Fatalf("again: %+v %v", again, err)
	}
	b, err := q.FindBinding(ctx, opts.Idempotency.Key, "reports")
	if err != nil || b == nil || b.HoldUntil != HoldUntilFinished || b.TTLMs != 0 || !b.ExpiresAt.IsZero() || b.Expired {
		t.Fatalf("binding: %+v %v", b, err)
	}
	var id string
	var attempt int
	if err := pool.QueryRow(ctx, "select id::text, attempt from workhorse.claim_jobs(array[$1], null, 'go~1', 1, 60000, false)", queue).
		Scan(&id, &attempt); err != nil || id != first.JobID {
		t.Fatalf("claim: %s %v", id, err)
	}
	running, err := q.EnqueueWithResult(ctx, "report.nightly", map[string]int{"day": 1}, opts)
	if err != nil || running.Outcome != Replayed || running.JobID != first.JobID {
		t.Fatalf("while running: %+v %v", running, err)
	}
	if _, err := pool.Exec(ctx, "select * from workhorse.complete_jobs(array[$1::uuid], array[$2::integer], array['go~1'], array['null'::jsonb])",
		id, attempt); err != nil {
		t.Fatal(err)
	}
	after, err := q.EnqueueWithResult(ctx, "report.nightly", map[string]int{"day": 1}, opts)
	if err != nil || after.Outcome != Accepted || after.JobID == first.JobID {
		t.Fatalf("after: %+v %v", after, err)
	}
}

func TestHoldUntilIsInTheFingerprint(t *testing.T) {
	q, _ := newTestQueue(t)
	ctx := context.Background()
	key := unique("k")
	if _, err := q.Enqueue(ctx, "t", map[string]int{}, EnqueueOptions{Idempotency: &Idempotency{Key: key, HoldUntil: Ptr(HoldUntilStarted), TTL: Ptr(24 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	_, err := q.Enqueue(ctx, "t", map[string]int{}, EnqueueOptions{Idempotency: &Idempotency{Key: key, HoldUntil: Ptr(HoldUntilFinished), TTL: Ptr(24 * time.Hour)}})
	var conflict *EnqueueIdempotencyConflictError
	if !errors.As(err, &conflict) || strings.Join(conflict.ConflictingFields, ",") != "holdUntil" {
		t.Fatalf("want a conflict naming holdUntil, got %v", err)
	}
}
