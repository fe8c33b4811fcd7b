package workhorse

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v4"
)

// listener is a connection of its own that LISTENs on workhorse_jobs, as a worker's does.
func listener(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, "listen "+wakeChannel); err != nil {
		t.Fatal(err)
	}
	return conn
}

// nextWake is the payload of the next workhorse_jobs notification (a queue name), within 10 s.
func nextWake(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("no wake-up arrived: %v", err)
	}
	return n.Payload
}

// marker sends a notification of the test's own after everything before it committed: PostgreSQL
// delivers notifications in commit order, so a listener that gets the marker next got nothing else.
func marker(t *testing.T, q *Queue) string {
	t.Helper()
	m := unique("marker")
	if _, err := q.pool.Exec(context.Background(), "select pg_notify($1, $2)", wakeChannel, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEnqueueWakesListenersAfterItsCommit(t *testing.T) {
	q, pool := newTestQueue(t)
	ctx := context.Background()
	conn := listener(t)
	queue := unique("wake")
	id, err := q.Enqueue(ctx, "wake.one", map[string]any{}, EnqueueOptions{Queue: Ptr(queue)})
	if err != nil {
		t.Fatal(err)
	}
	if got := nextWake(t, conn); got != queue {
		t.Fatalf("woken for %q, want %q", got, queue)
	}
	if countRows(t, pool, "select count(*) from workhorse.job where id = $1", id) != 1 {
		t.Fatal("the job is not committed")
	}

	// A batch wakes each queue that got a job once; a replay (no new job) wakes nobody.
	a, b := unique("wake-a"), unique("wake-b")
	key := &Idempotency{Key: unique("k")}
	_, err = q.EnqueueMany(ctx, []Request{
		{Type: "wake.many", Payload: 1, Options: EnqueueOptions{Queue: Ptr(a)}},
		{Type: "wake.many", Payload: 2, Options: EnqueueOptions{Queue: Ptr(b), Idempotency: key}},
		{Type: "wake.many", Payload: 3, Options: EnqueueOptions{Queue: Ptr(a)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for i := 0; i < 2; i++ {
		got[nextWake(t, conn)]++
	}
	if got[a] != 1 || got[b] != 1 {
		t.Fatalf("woken %v, want %s and %s once each", got, a, b)
	}
	r, err := q.EnqueueWithResult(ctx, "wake.many", 2, EnqueueOptions{Queue: Ptr(b), Idempotency: key})
	if err != nil || r.Outcome != Replayed {
		t.Fatalf("replay: %+v %v", r, err)
	}
	m := marker(t, q)
	if next := nextWake(t, conn); next != m {
		t.Fatalf("a replay woke %q", next)
	}
}

// The enqueue statement itself sends no NOTIFY (its commit would take PostgreSQL's global notify
// lock): with the wake-up turned off, a listener gets nothing from single calls and batches.
func TestEnqueueStatementSendsNoNotify(t *testing.T) {
	q, _ := newTestQueue(t, WithNotify(false))
	ctx := context.Background()
	conn := listener(t)
	queue := unique("quiet")
	if _, err := q.Enqueue(ctx, "quiet.one", 1, EnqueueOptions{Queue: Ptr(queue)}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, "quiet.one", 2, EnqueueOptions{Queue: Ptr(queue), Idempotency: &Idempotency{Key: unique("k")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.EnqueueMany(ctx, []Request{{Type: "quiet.many", Payload: 3, Options: EnqueueOptions{Queue: Ptr(queue)}},
		{Type: "quiet.many", Payload: 4, Options: EnqueueOptions{Queue: Ptr(unique("quiet"))}}}); err != nil {
		t.Fatal(err)
	}
	m := marker(t, q)
	if next := nextWake(t, conn); next != m {
		t.Fatalf("the enqueue statement notified %q", next)
	}
}
