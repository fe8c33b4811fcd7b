package workhorse

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// orders is the caller's own table: the business write that must commit or roll back with the job.
func orders(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), "create table if not exists tx_test_orders (id text primary key)"); err != nil {
		t.Fatal(err)
	}
}

func begin(t *testing.T, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

func TestEnqueueTxCommitsWithTheCallersWrite(t *testing.T) {
	q, pool := newTestQueue(t)
	orders(t, pool)
	ctx := context.Background()
	conn := listener(t)
	order, queue := unique("order"), unique("tx-commit")
	tx := begin(t, pool)
	if _, err := tx.Exec(ctx, "insert into tx_test_orders (id) values ($1)", order); err != nil {
		t.Fatal(err)
	}
	id, err := q.EnqueueTx(ctx, tx, "order.place", map[string]any{"order": order}, EnqueueOptions{Queue: Ptr(queue), Idempotency: &Idempotency{Key: order}})
	if err != nil {
		t.Fatal(err)
	}
	// Not visible outside the transaction before it commits.
	if countRows(t, pool, "select count(*) from workhorse.job where id = $1", id) != 0 {
		t.Fatal("the job is visible before the caller's commit")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if countRows(t, pool, "select count(*) from workhorse.job where id = $1", id) != 1 ||
		countRows(t, pool, "select count(*) from tx_test_orders where id = $1", order) != 1 {
		t.Fatal("the job and the order did not commit together")
	}
	if got := nextWake(t, conn); got != queue {
		t.Fatalf("woken for %q, want %q (the NOTIFY commits with the transaction)", got, queue)
	}
	// The key is bound: the same request outside the transaction replays it.
	again, err := q.EnqueueWithResult(ctx, "order.place", map[string]any{"order": order}, EnqueueOptions{Queue: Ptr(queue), Idempotency: &Idempotency{Key: order}})
	if err != nil || again.Outcome != Replayed || again.JobID != id {
		t.Fatalf("after the commit: %+v %v, want a replay of %s", again, err, id)
	}
}

func TestEnqueueTxRollsBackWithTheCallersWrite(t *testing.T) {
	q, pool := newTestQueue(t)
	orders(t, pool)
	ctx := context.Background()
	order := unique("order")
	opts := EnqueueOptions{Queue: Ptr("tx-rollback"), Idempotency: &Idempotency{Key: order}}
	tx := begin(t, pool)
	if _, err := tx.Exec(ctx, "insert into tx_test_orders (id) values ($1)", order); err != nil {
		t.Fatal(err)
	}
	ids, err := q.EnqueueManyTx(ctx, tx, []Request{
		{Type: "order.place", Payload: 1, Options: opts},
		{Type: "order.audit", Payload: 2, Options: EnqueueOptions{Queue: Ptr("tx-rollback")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, pool, "select count(*) from workhorse.job where id = any($1::uuid[])", ids); n != 0 {
		t.Fatalf("%d jobs survived the rollback", n)
	}
	if countRows(t, pool, "select count(*) from tx_test_orders where id = $1", order) != 0 {
		t.Fatal("the order survived the rollback")
	}
	// Nothing holds the key: the next request is accepted as a new job.
	r, err := q.EnqueueWithResult(ctx, "order.place", 1, opts)
	if err != nil || r.Outcome != Accepted || r.JobID == ids[0] {
		t.Fatalf("after the rollback: %+v %v, want a new accepted job", r, err)
	}
}

func TestEnqueueTxReplaysAndConflictsInsideTheTransaction(t *testing.T) {
	q, pool := newTestQueue(t)
	orders(t, pool)
	ctx := context.Background()
	key := unique("k")
	opts := EnqueueOptions{Queue: Ptr("tx-decide"), Idempotency: &Idempotency{Key: key}}
	first, err := q.Enqueue(ctx, "order.place", map[string]any{"n": 1}, opts)
	if err != nil {
		t.Fatal(err)
	}

	// A replay inside the transaction answers the original job and leaves the transaction usable.
	tx := begin(t, pool)
	r, err := q.EnqueueWithResultTx(ctx, tx, "order.place", map[string]any{"n": 1}, opts)
	if err != nil || r.Outcome != Replayed || r.JobID != first {
		t.Fatalf("replay in tx: %+v %v, want %s replayed", r, err, first)
	}

	// A conflict inside a savepoint: the typed error, and the outer transaction goes on.
	sp, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.EnqueueTx(ctx, sp, "order.place", map[string]any{"n": 2}, opts)
	var conflict *EnqueueIdempotencyConflictError
	if !errors.As(err, &conflict) || conflict.ExistingJobID != first || !contains(conflict.ConflictingFields, "payload") {
		t.Fatalf("conflict in a savepoint: %v", err)
	}
	if err := sp.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	order := unique("order")
	if _, err := tx.Exec(ctx, "insert into tx_test_orders (id) values ($1)", order); err != nil {
		t.Fatalf("the transaction is not usable after the savepoint's rollback: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if countRows(t, pool, "select count(*) from tx_test_orders where id = $1", order) != 1 {
		t.Fatal("the order did not commit")
	}

	// A conflict outside a savepoint aborts the caller's transaction, as any SQL error does.
	tx2 := begin(t, pool)
	_, err = q.EnqueueTx(ctx, tx2, "order.place", map[string]any{"n": 3}, opts)
	if !errors.As(err, &conflict) {
		t.Fatalf("conflict in tx: %v", err)
	}
	_, err = tx2.Exec(ctx, "select 1")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "25P02" {
		t.Fatalf("after a conflict the transaction is aborted (25P02), got %v", err)
	}
}

func TestEnqueueTxWithoutATransactionIsAValidationError(t *testing.T) {
	q, _ := newTestQueue(t)
	_, err := q.EnqueueTx(context.Background(), nil, "t", 1, EnqueueOptions{})
	var v *EnqueueValidationError
	if !errors.As(err, &v) || v.Issues[0].Option != "tx" {
		t.Fatalf("got %v, want a validation error naming tx", err)
	}
	_, err = q.EnqueueManyTx(context.Background(), nil, []Request{{Type: "t", Payload: 1}})
	if !errors.As(err, &v) || v.Issues[0].Option != "tx" {
		t.Fatalf("batch: got %v, want a validation error naming tx", err)
	}
}
