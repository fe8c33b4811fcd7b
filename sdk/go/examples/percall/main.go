// A per-call timing loop for bench/clients.ts: N keyed enqueues, one at a time, from one caller.
//
//	DATABASE_URL=... go run ./examples/percall <calls> <key prefix>
//
// Prints one line of JSON: {"calls": N, "seconds": S}.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"

	"workhorse"
)

func main() {
	calls, _ := strconv.Atoi(os.Args[1])
	prefix := os.Args[2]
	ctx := context.Background()
	pool, err := pgxpool.Connect(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer pool.Close()
	queue := workhorse.NewQueue(pool)
	defer queue.Close()
	enqueue := func(i int) error {
		key := fmt.Sprintf("%s-%d", prefix, i)
		payload := map[string]any{"invoiceId": "INV-" + key, "amount": 4200, "currency": "EUR", "customer": "cus_" + key, "lines": []int{1, 2, 3}}
		_, err := queue.Enqueue(ctx, "invoice.capture", payload, workhorse.EnqueueOptions{
			Queue: "billing", Idempotency: &workhorse.Idempotency{Key: key, Scope: "invoice-capture"},
		})
		return err
	}
	if err := enqueue(-1); err != nil { // warm-up: the pool's connection, the installation key
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := time.Now()
	for i := 0; i < calls; i++ {
		if err := enqueue(i); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	out, _ := json.Marshal(map[string]any{"calls": calls, "seconds": time.Since(start).Seconds()})
	fmt.Println(string(out))
}
