package workhorse

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"
)

// observation is one row of workhorse.enqueue_observation (replayed, conflict, coalesced,
// non_replaceable), as the TypeScript core records it.
type observation struct {
	At                    time.Time `json:"at"`
	Outcome               string    `json:"outcome"`
	Reason                *string   `json:"reason"`
	Queue                 string    `json:"queue"`
	Type                  string    `json:"type"`
	Scope                 string    `json:"scope"`
	KeyPreview            string    `json:"key_preview"`
	KeyDigest             string    `json:"key_digest"`
	KeyLength             int       `json:"key_length"`
	JobID                 *string   `json:"job_id"`
	ConflictingFields     []string  `json:"conflicting_fields"`
	PayloadPaths          []string  `json:"payload_paths"`
	StoredRequestDigest   *string   `json:"stored_request_digest"`
	RejectedRequestDigest *string   `json:"rejected_request_digest"`
	Source                *string   `json:"source"`
}

const insertObservations = `insert into workhorse.enqueue_observation
  (at, outcome, reason, queue, type, scope, key_preview, key_digest, key_length, job_id, conflicting_fields,
   payload_paths, stored_request_digest, rejected_request_digest, source)
select x.at, x.outcome, x.reason, x.queue, x.type, x.scope, x.key_preview, x.key_digest, x.key_length, x.job_id,
       x.conflicting_fields, x.payload_paths, x.stored_request_digest, x.rejected_request_digest, x.source
  from jsonb_to_recordset($1::jsonb) as x(at timestamptz, outcome text, reason text, queue text, type text, scope text,
       key_preview text, key_digest text, key_length integer, job_id uuid, conflicting_fields text[],
       payload_paths text[], stored_request_digest text, rejected_request_digest text, source text)`

const (
	recorderBuffer   = 10_000
	recorderBatch    = 500
	recorderInterval = 200 * time.Millisecond
)

// recorder appends observations outside the enqueue call: record never blocks or fails; a
// background goroutine writes batches; what cannot be kept is counted as dropped.
type recorder struct {
	pool    *pgxpool.Pool
	mu      sync.Mutex
	buf     []observation
	dropped int
	done    chan struct{}
	stopped chan struct{}
}

func newRecorder(pool *pgxpool.Pool) *recorder {
	r := &recorder{pool: pool, done: make(chan struct{}), stopped: make(chan struct{})}
	if pool == nil {
		close(r.stopped)
		return r
	}
	go r.loop()
	return r
}

func (r *recorder) record(o observation) {
	r.mu.Lock()
	if len(r.buf) >= recorderBuffer {
		r.dropped++
	} else {
		r.buf = append(r.buf, o)
	}
	r.mu.Unlock()
}

func (r *recorder) loop() {
	defer close(r.stopped)
	t := time.NewTicker(recorderInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.flush()
		case <-r.done:
			r.flush()
			return
		}
	}
}

func (r *recorder) flush() {
	for {
		r.mu.Lock()
		n := len(r.buf)
		if n > recorderBatch {
			n = recorderBatch
		}
		batch := append([]observation(nil), r.buf[:n]...)
		r.buf = r.buf[n:]
		r.mu.Unlock()
		if n == 0 {
			return
		}
		body, _ := json.Marshal(batch)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := r.pool.Exec(ctx, insertObservations, string(body))
		cancel()
		if err != nil {
			r.mu.Lock()
			r.dropped += n // a lost observation never fails or slows an enqueue
			r.mu.Unlock()
			return
		}
	}
}

func (r *recorder) close() {
	select {
	case <-r.done:
	default:
		close(r.done)
	}
	<-r.stopped
}

// ObservationsDropped counts observations that could not be written (full buffer, database error).
func (q *Queue) ObservationsDropped() int {
	q.recorder.mu.Lock()
	defer q.recorder.mu.Unlock()
	return q.recorder.dropped
}
