// A per-call timing loop for bench/clients.ts: N keyed enqueues in all, each caller (a goroutine)
// one at a time, on a pool with one connection per caller.
//
//	DATABASE_URL=... go run ./examples/percall <calls> <key prefix> [callers, default 1]
//
// Prints one line of JSON: {"calls": N, "seconds": S}.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"

	"workhorse"
)

func main() {
	calls, _ := strconv.Atoi(os.Args[1])
	prefix := os.Args[2]
	callers := 1
	if len(os.Args) > 3 {
		callers, _ = strconv.Atoi(os.Args[3])
	}
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg.MaxConns = int32(callers)
	if cfg.MaxConns < 2 {
		cfg.MaxConns = 2
	}
	pool, err := pgxpool.ConnectConfig(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer pool.Close()
	queue, err := workhorse.NewQueue(pool)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer queue.Close()
	enqueue := func(i int) error {
		key := fmt.Sprintf("%s-%d", prefix, i)
		payload := map[string]any{"invoiceId": "INV-" + key, "amount": 4200, "currency": "EUR", "customer": "cus_" + key, "lines": []int{1, 2, 3}}
		_, err := queue.Enqueue(ctx, "invoice.capture", payload, workhorse.EnqueueOptions{
			Queue: workhorse.Ptr("billing"), Idempotency: &workhorse.Idempotency{Key: key, Scope: workhorse.Ptr("invoice-capture")},
		})
		return err
	}
	if err := enqueue(-1); err != nil { // warm-up: the pool's connection, the installation key
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var next int64 = -1
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := atomic.AddInt64(&next, 1); i < int64(calls); i = atomic.AddInt64(&next, 1) {
				if err := enqueue(int(i)); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
			}
		}()
	}
	wg.Wait()
	out, _ := json.Marshal(map[string]any{"calls": calls, "seconds": time.Since(start).Seconds()})
	fmt.Println(string(out))
}
