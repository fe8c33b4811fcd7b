package workhorse_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"

	"workhorse"
)

// Enqueue inside your own transaction, then see a repeat replay and other work under the same key
// conflict (docs/clients-go.md, "Start here"). DATABASE_URL names a database the TypeScript
// migrate() prepared; `go test` runs this against its test server.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	queue, err := workhorse.NewQueue(pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer queue.Close()
	orderID := fmt.Sprintf("order:%d", time.Now().UnixNano())
	order := workhorse.EnqueueOptions{Queue: workhorse.Ptr("billing"), Idempotency: &workhorse.Idempotency{Key: orderID}}

	tx, err := pool.Begin(ctx) // the order and its job commit together
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "create table if not exists example_orders (id text primary key)"); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := tx.Exec(ctx, "insert into example_orders (id) values ($1)", orderID); err != nil {
		fmt.Println(err)
		return
	}
	jobID, err := queue.EnqueueTx(ctx, tx, "order.place", map[string]any{"order": 42}, order)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := tx.Commit(ctx); err != nil {
		fmt.Println(err)
		return
	}

	again, err := queue.EnqueueWithResult(ctx, "order.place", map[string]any{"order": 42}, order)
	fmt.Println(again.Outcome, again.JobID == jobID, err)

	_, err = queue.Enqueue(ctx, "order.place", map[string]any{"order": 43}, order)
	var conflict *workhorse.EnqueueIdempotencyConflictError
	if errors.As(err, &conflict) {
		fmt.Println(conflict.ConflictingFields, conflict.PayloadPaths)
	}
	// Output:
	// replayed true <nil>
	// [payload] [$.order]
}
