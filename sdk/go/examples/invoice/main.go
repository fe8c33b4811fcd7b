// The invoice-capture example of `npm run example`, from Go: accept, replay, conflict, binding.
// Needs DATABASE_URL pointing at a database migrated by the TypeScript core (sdk/go/README.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"

	"workhorse"
)

type capture struct {
	InvoiceID   string `json:"invoiceId"`
	AmountCents int    `json:"amountCents"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	pool, err := pgxpool.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer pool.Close()
	queue, err := workhorse.NewQueue(pool, workhorse.WithSource("example"))
	if err != nil {
		return err
	}
	defer queue.Close()

	invoiceID := fmt.Sprintf("INV-%d", time.Now().UnixMilli())
	options := workhorse.EnqueueOptions{
		Queue:       workhorse.Ptr("billing"),
		Idempotency: &workhorse.Idempotency{Key: "capture:" + invoiceID, Scope: workhorse.Ptr("invoice-capture"), TTL: workhorse.Ptr(24 * time.Hour)},
	}
	first, err := queue.EnqueueWithResult(ctx, "invoice.capture", capture{invoiceID, 4200}, options)
	if err != nil {
		return err
	}
	fmt.Printf("%-48s%s job %s\n", "1. enqueue the capture of "+invoiceID+":", first.Outcome, first.JobID)
	// The same request again, keys in another order: a replay.
	again, err := queue.EnqueueWithResult(ctx, "invoice.capture", map[string]any{"amountCents": 4200, "invoiceId": invoiceID}, options)
	if err != nil {
		return err
	}
	fmt.Printf("%-48s%s job %s\n", "2. the same request again (client retry):", again.Outcome, again.JobID)

	_, err = queue.Enqueue(ctx, "invoice.capture", capture{invoiceID, 9900}, options)
	var conflict *workhorse.EnqueueIdempotencyConflictError
	if !errors.As(err, &conflict) {
		return fmt.Errorf("3. unexpected: a different amount was not a conflict: %v", err)
	}
	fmt.Printf("%-48sconflict with job %s: fields [%s], payload paths [%s], key %s (digest %s)\n",
		"3. same key, different amount:", conflict.ExistingJobID, strings.Join(conflict.ConflictingFields, ", "),
		strings.Join(conflict.PayloadPaths, ", "), conflict.KeyPreview, conflict.KeyDigest)

	binding, err := queue.FindBinding(ctx, options.Idempotency.Key, *options.Idempotency.Scope)
	if err != nil || binding == nil {
		return fmt.Errorf("4. no binding: %v", err)
	}
	fmt.Printf("%-48sscope %s, key %s (%d chars, digest %s), expires %s\n", "4. the binding:", binding.Scope,
		binding.KeyPreview, binding.KeyLength, binding.KeyDigest, binding.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z"))
	return nil
}
