package workhorse

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A keyed call whose earlier try committed but whose answer was lost: the retry proposes the same
// job id with p_retry set, PostgreSQL recognises the job, writes nothing, and the call reports
// accepted (not a replay of someone else's job).
func TestRetryRecognisesItsOwnCommittedTry(t *testing.T) {
	q, pool := newTestQueue(t)
	ctx := context.Background()
	key := unique("lost-reply")
	n, err := normalize("t", map[string]any{"a": 1}, EnqueueOptions{Idempotency: &Idempotency{Key: key}}, defaultPayloadBytes, "", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := q.prepare(ctx, true); err != nil {
		t.Fatal(err)
	}
	n.Keyed.Key = q.identify(n.Keyed.Scope, n.Keyed.key)
	ids := []string{newJobID()}
	rs := []*normalizedRequest{n}
	if _, err := q.send(ctx, rs, ids, false, nil); err != nil { // the first try commits; pretend its answer was lost
		t.Fatal(err)
	}
	rows, err := q.send(ctx, rs, ids, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := q.report(rs, ids, rows, true, false)
	if res[0].Outcome != Accepted || res[0].JobID != ids[0] || q.RetryStats().RecoveredAccepts != 1 {
		t.Fatalf("%+v %+v", res[0], q.RetryStats())
	}
	if c := countRows(t, pool, "select count(*)::int from workhorse.job where id = $1::uuid", ids[0]); c != 1 {
		t.Fatalf("%d jobs", c)
	}
}

// PostgreSQL restarts (fast shutdown: every connection is cut) while keyed calls run: every call
// returns the id of the one job its key names, and no key gets a second job.
func TestPostgresRestartDuringKeyedCalls(t *testing.T) {
	if pgDataDir == "" {
		t.Skip("DATABASE_URL is set: the tests do not own the server, so they cannot restart it")
	}
	q, pool := newTestQueue(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prefix := unique("restart")
	const workers = 4
	ids := make([][]string, workers)
	errs := make([][]error, workers)
	started, stop := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			// Calls run until well after the restart, so some are cut by it (checked below).
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if i == 5 {
					once.Do(func() { close(started) })
				}
				key := fmt.Sprintf("%s-%d-%d", prefix, w, i)
				id, err := q.Enqueue(ctx, "t", map[string]any{"i": i}, EnqueueOptions{Idempotency: &Idempotency{Key: key}})
				ids[w], errs[w] = append(ids[w], id), append(errs[w], err)
				time.Sleep(5 * time.Millisecond)
			}
		}(w)
	}
	<-started
	restartPostgres(t)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	total := 0
	for w := range ids {
		for i, id := range ids[w] {
			if errs[w][i] != nil {
				t.Fatalf("call %d/%d failed: %v", w, i, errs[w][i])
			}
			total++
			key := fmt.Sprintf("%s-%d-%d", prefix, w, i)
			b, err := q.FindBinding(ctx, key, "")
			if err != nil || b == nil || b.JobID != id {
				t.Fatalf("key %s: binding %+v (%v), call returned %s", key, b, err, id)
			}
		}
	}
	jobs := countRows(t, pool, "select count(*)::int from workhorse.job where key_scope = 'default' and key_preview is not null and payload ? 'i' and created_at > now() - interval '5 minutes' and id = any($1::uuid[])", flatten(ids))
	if jobs != total {
		t.Fatalf("%d jobs for %d keys", jobs, total)
	}
	// No key has a second job: every job of these calls owns its key.
	var orphans int
	if err := pool.QueryRow(ctx, `select count(*)::int from workhorse.job j where j.created_at > now() - interval '5 minutes'
	   and j.type = 't' and j.payload ? 'i' and not exists (select 1 from workhorse.key_binding b where b.job_id = j.id)`).Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 {
		t.Fatalf("%d jobs without their key's binding (duplicates)", orphans)
	}
	t.Logf("%d keyed calls, retry stats after the restart: %+v", total, q.RetryStats())
	if q.RetryStats().Retries == 0 {
		t.Fatalf("the restart cut no call (no retry happened): the test did not test anything")
	}
}

func flatten(xs [][]string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}
