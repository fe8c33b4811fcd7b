package workhorse

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"
)

// wakeChannel is the channel workers LISTEN on; the payload is the queue name.
const wakeChannel = "workhorse_jobs"

// wakeSQL wakes the workers of every queue in $2 (text[]) in one statement of its own.
const wakeSQL = "select pg_notify($1, q) from unnest($2::text[]) q"

// waker sends wake-ups after enqueues committed, as the TypeScript core does: the enqueue
// statement itself sends no NOTIFY (p_notify false), because a NOTIFY inside a transaction takes
// PostgreSQL's global notify lock at commit and serialises every committing enqueue. At most one
// wake-up statement is in flight; queues named meanwhile go in the next one. Best effort: an error
// is dropped, as workers poll as well (a lost wake-up delays a job by at most the poll interval).
type waker struct {
	pool    *pgxpool.Pool
	mu      sync.Mutex
	pending map[string]struct{}
	sending bool
	closed  bool
	wg      sync.WaitGroup
}

func newWaker(pool *pgxpool.Pool) *waker {
	return &waker{pool: pool, pending: map[string]struct{}{}}
}

// wake adds queues to the next wake-up and starts sending if nothing is in flight. Never blocks
// on the database; after close it does nothing.
func (w *waker) wake(queues []string) {
	if len(queues) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.pool == nil {
		return
	}
	for _, q := range queues {
		w.pending[q] = struct{}{}
	}
	if !w.sending {
		w.sending = true
		w.wg.Add(1)
		go w.send()
	}
}

func (w *waker) send() {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		if len(w.pending) == 0 {
			w.sending = false
			w.mu.Unlock()
			return
		}
		queues := make([]string, 0, len(w.pending))
		for q := range w.pending {
			queues = append(queues, q)
		}
		w.pending = map[string]struct{}{}
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = w.pool.Exec(ctx, wakeSQL, wakeChannel, queues) // a lost wake-up only delays a job
		cancel()
	}
}

// close sends what is pending, then lets no further wake-up start.
func (w *waker) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wg.Wait()
}
