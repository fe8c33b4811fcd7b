package workhorse

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v4"
)

// tryCutter ends tries of an enqueue inside PostgreSQL: a transaction of the test's own holds
// workhorse.key_binding in ACCESS EXCLUSIVE mode (every enqueue of a keyed request reads it, even
// one that only finds a conflict), so a try waits on that lock until cut terminates its backend
// (pg_terminate_backend, from another connection): the client loses its connection mid-call.
type tryCutter struct {
	t          *testing.T
	admin      *pgx.Conn
	blocker    *pgx.Conn
	blockerTx  pgx.Tx
	blockerPID uint32
}

func newTryCutter(t *testing.T) *tryCutter {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, testURL)
	if err != nil {
		t.Fatal(err)
	}
	blocker, err := pgx.Connect(ctx, testURL)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "lock table workhorse.key_binding in access exclusive mode"); err != nil {
		t.Fatal(err)
	}
	c := &tryCutter{t: t, admin: admin, blocker: blocker, blockerTx: tx, blockerPID: blocker.PgConn().PID()}
	t.Cleanup(func() {
		c.release()
		_ = blocker.Close(ctx)
		_ = admin.Close(ctx)
	})
	return c
}

// waiting polls, for at most 30 s, the enqueue statements waiting on the blocker's lock until there are some.
func (c *tryCutter) waiting() []int32 {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pids []int32
		if err := c.admin.QueryRow(context.Background(),
			"select coalesce(array_agg(pid), '{}') from pg_stat_activity where $1 = any(pg_blocking_pids(pid))"+
				" and position('workhorse.enqueue' in query) > 0",
			int32(c.blockerPID)).Scan(&pids); err != nil {
			c.t.Fatal(err)
		}
		if len(pids) > 0 {
			return pids
		}
		if time.Now().After(deadline) {
			c.t.Fatal("timed out waiting for a try to wait on the lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cut waits for the next try to wait on the lock, terminates its backend and waits until it is gone.
func (c *tryCutter) cut() {
	c.t.Helper()
	pids := c.waiting()
	if len(pids) != 1 {
		c.t.Fatalf("tries waiting on the lock: %v", pids)
	}
	ctx := context.Background()
	var ok bool
	// With a timeout, pg_terminate_backend returns once the backend has exited (PostgreSQL 14+).
	if err := c.admin.QueryRow(ctx, "select pg_terminate_backend($1, 30000)", pids[0]).Scan(&ok); err != nil || !ok {
		c.t.Fatalf("pg_terminate_backend(%d): %v %v", pids[0], ok, err)
	}
}

func (c *tryCutter) release() {
	_ = c.blockerTx.Rollback(context.Background())
}

type enqueueOutcome struct {
	id  string
	err error
}

func enqueueInBackground(q *Queue, payload map[string]any, opts EnqueueOptions) <-chan enqueueOutcome {
	done := make(chan enqueueOutcome, 1)
	go func() {
		id, err := q.Enqueue(context.Background(), "t", payload, opts)
		done <- enqueueOutcome{id, err}
	}()
	return done
}

func waitFor(t *testing.T, done <-chan enqueueOutcome) enqueueOutcome {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("the call did not finish")
		return enqueueOutcome{}
	}
}

// A keyed call whose first try loses its connection and whose second try meets the key bound to
// another request: the call returns the conflict, and it is no exhausted retry (Exhausted counts
// calls whose last try still failed retryably).
func TestKeyedRetryConflictOnTheSecondTryIsNotExhausted(t *testing.T) {
	q, _ := newTestQueue(t)
	opts := EnqueueOptions{Idempotency: &Idempotency{Key: "k", Scope: Ptr(unique("conflict-retry"))}}
	bound, err := q.Enqueue(context.Background(), "t", map[string]any{"a": 1}, opts)
	if err != nil {
		t.Fatal(err)
	}
	cutter := newTryCutter(t)
	done := enqueueInBackground(q, map[string]any{"b": 2}, opts) // the same key, another request
	cutter.cut()                                                 // the first try loses its connection
	cutter.release()                                             // the second try meets the bound key
	r := waitFor(t, done)
	var conflict *EnqueueIdempotencyConflictError
	if !errors.As(r.err, &conflict) || conflict.ExistingJobID != bound {
		t.Fatalf("want the conflict naming %s, got %v", bound, r.err)
	}
	if s := q.RetryStats(); s != (RetryStats{RetriedCalls: 1, Retries: 1}) {
		t.Fatalf("retry stats %+v", s)
	}
}

// Every try of a keyed call losing its connection: one exhausted call, with the retryable error.
func TestKeyedRetryEveryTryCutIsExhausted(t *testing.T) {
	q, _ := newTestQueue(t, WithRetry(3, 0))
	scope := unique("exhausted")
	if _, err := q.Enqueue(context.Background(), "t", map[string]any{"warm": 1}, EnqueueOptions{Idempotency: &Idempotency{Key: "warm", Scope: Ptr(scope)}}); err != nil {
		t.Fatal(err) // the installation secret and the layout are read
	}
	cutter := newTryCutter(t)
	done := enqueueInBackground(q, map[string]any{"c": 3}, EnqueueOptions{Idempotency: &Idempotency{Key: "k", Scope: Ptr(scope)}})
	for i := 0; i < 3; i++ { // every try
		cutter.cut()
	}
	r := waitFor(t, done)
	var dbErr *DatabaseError
	if !errors.As(r.err, &dbErr) || !dbErr.Retryable {
		t.Fatalf("want a retryable DatabaseError, got %v", r.err)
	}
	if s := q.RetryStats(); s != (RetryStats{RetriedCalls: 1, Retries: 2, Exhausted: 1}) {
		t.Fatalf("retry stats %+v", s)
	}
}
