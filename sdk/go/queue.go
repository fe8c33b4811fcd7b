package workhorse

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// Queue enqueues jobs over a caller-owned *pgxpool.Pool; Close never closes the pool. A Queue is
// safe for concurrent use.
type Queue struct {
	pool          *pgxpool.Pool
	maxPayload    int
	source        string
	retryAttempts int
	retryMaxDelay time.Duration
	outsideSecret []byte
	configErr     error
	mu            sync.Mutex
	secret        []byte
	legacyUntil   time.Time
	layoutChecked bool
	// distributed: the schema has the Citus layout (docs/scale-out.md); set by prepare.
	distributed bool
	recorder    *recorder
	notify      bool
	waker       *waker
	closed      bool
	stats       RetryStats
	statsMu     sync.Mutex
	nowForTests func() time.Time
}

// RetryStats counts what the keyed-call retry did since the Queue was made.
type RetryStats struct {
	RetriedCalls     int // calls that needed more than one try
	Retries          int // tries after the first
	Exhausted        int // retried calls whose last try still failed with a retryable error (not a conflict or other refusal)
	RecoveredAccepts int // retried calls whose earlier try had committed (reported as accepted)
}

// Option configures a Queue.
type Option func(*Queue)

// WithKeySecret supplies the installation secret (32 bytes) instead of WORKHORSE_KEY_SECRET or the
// secret the first migrate() stored in workhorse.installation.
func WithKeySecret(secret []byte) Option {
	return func(q *Queue) {
		if len(secret) != 32 {
			q.configErr = newValidationError(ValidationIssue{Option: "keySecret", Rule: "must be 32 bytes"})
			return
		}
		q.outsideSecret = append([]byte(nil), secret...)
	}
}

// WithSource labels this Queue's observations (replays, conflicts) in the operations console.
func WithSource(source string) Option { return func(q *Queue) { q.source = source } }

// WithMaxPayloadBytes bounds payloads as PostgreSQL stores them (default 1 MiB).
func WithMaxPayloadBytes(n int) Option {
	return func(q *Queue) {
		if n < 2 || n > 256*1024*1024 {
			q.configErr = newValidationError(ValidationIssue{Option: "maxPayloadBytes", Rule: "must be an integer 2..268435456"})
			return
		}
		q.maxPayload = n
	}
}

// WithRetry sets how keyed calls repeat themselves after connection loss or a retryable SQLSTATE
// (default 12 tries, backoff capped at 3 s). attempts 1 turns the retry off.
func WithRetry(attempts int, maxDelay time.Duration) Option {
	return func(q *Queue) {
		if attempts < 1 || attempts > 20 || maxDelay < 0 || maxDelay > time.Minute {
			q.configErr = newValidationError(ValidationIssue{Option: "retry", Rule: "attempts must be 1..20 and maxDelay 0..60s"})
			return
		}
		q.retryAttempts, q.retryMaxDelay = attempts, maxDelay
	}
}

// WithNotify turns the wake-up off (false) or on (true, the default). On, every call that
// accepted jobs is followed, after its commit, by one `select pg_notify('workhorse_jobs', q) from
// unnest($2::text[]) q` for the queues that got them, sent in the background (coalesced: at most
// one in flight per Queue) and best effort: its error is dropped, never the enqueue's. Workers that
// LISTEN then claim at once; without it they find the job at their next poll.
func WithNotify(on bool) Option { return func(q *Queue) { q.notify = on } }

// NewQueue makes a Queue over pool, as pgxpool.New makes a pool: a nil pool, a bad option or a
// malformed WORKHORSE_KEY_SECRET is an *EnqueueValidationError naming it, and no Queue. The
// installation secret comes from WithKeySecret, else WORKHORSE_KEY_SECRET (64 hex characters),
// else workhorse.installation (read once, on the first keyed call or key lookup). Nothing is sent
// to the database here.
func NewQueue(pool *pgxpool.Pool, options ...Option) (*Queue, error) {
	q := &Queue{pool: pool, maxPayload: defaultPayloadBytes, retryAttempts: 12, retryMaxDelay: 3 * time.Second, notify: true}
	if env := strings.TrimSpace(os.Getenv("WORKHORSE_KEY_SECRET")); env != "" {
		b, err := hex.DecodeString(env)
		if err != nil || len(b) != 32 {
			q.configErr = newValidationError(ValidationIssue{Option: "WORKHORSE_KEY_SECRET",
				Rule: "must be 64 hexadecimal characters (32 bytes), e.g. from `openssl rand -hex 32`"})
		} else {
			q.outsideSecret = b
		}
	}
	for _, o := range options {
		o(q)
	}
	if pool == nil && q.configErr == nil {
		q.configErr = newValidationError(ValidationIssue{Option: "pool", Rule: "must be a *pgxpool.Pool"})
	}
	if q.source != "" && (hasControl(q.source) || utf8Chars(q.source) > sourceChars) && q.configErr == nil {
		q.configErr = newValidationError(ValidationIssue{Option: "source", Rule: "must be 1..128 characters without control characters"})
	}
	if q.configErr != nil {
		return nil, q.configErr
	}
	q.recorder = newRecorder(pool)
	q.waker = newWaker(pool)
	return q, nil
}

// Close flushes the observation log and the pending wake-up, and refuses further calls. It never
// closes the pool.
func (q *Queue) Close() {
	q.mu.Lock()
	already := q.closed
	q.closed = true
	q.mu.Unlock()
	if !already {
		q.recorder.close()
		q.waker.close()
	}
}

// RetryStats returns what the keyed-call retry did so far.
func (q *Queue) RetryStats() RetryStats {
	q.statsMu.Lock()
	defer q.statsMu.Unlock()
	return q.stats
}

func (q *Queue) now() time.Time {
	if q.nowForTests != nil {
		return q.nowForTests()
	}
	return time.Now()
}

func (q *Queue) usable() error {
	q.mu.Lock()
	closed := q.closed
	q.mu.Unlock()
	if closed {
		return ErrQueueClosed
	}
	return nil
}

// prepare checks the schema layout once and, when keys are needed, loads the installation secret
// once (a failed read is retried on the next call).
func (q *Queue) prepare(ctx context.Context, needKeys bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.layoutChecked {
		var distributed bool
		if err := q.pool.QueryRow(ctx, layoutSQL).Scan(&distributed); err != nil {
			return newDatabaseError("reading the schema layout", err)
		}
		q.distributed = distributed
		q.layoutChecked = true
	}
	if !needKeys || q.secret != nil {
		return nil
	}
	column := "key_secret"
	if q.outsideSecret != nil {
		column = "null::bytea"
	}
	var stored []byte
	var legacyMs float64
	err := q.pool.QueryRow(ctx, fmt.Sprintf(installationQ, column)).Scan(&stored, &legacyMs)
	if err != nil {
		return newDatabaseError("reading the installation key", err)
	}
	secret := q.outsideSecret
	if secret == nil {
		secret = stored
	}
	if len(secret) != 32 {
		return errors.New("workhorse: the installation key is missing or malformed in workhorse.installation")
	}
	if legacyMs > 0 {
		q.legacyUntil = time.Now().Add(time.Duration(legacyMs)*time.Millisecond + 5*time.Second)
	}
	q.secret = secret
	return nil
}

func (q *Queue) identify(scope, key string) KeyIdentity {
	q.mu.Lock()
	secret, legacy := q.secret, time.Now().Before(q.legacyUntil)
	q.mu.Unlock()
	return identify(secret, legacy, scope, key)
}

// Enqueue enqueues one job and returns its id (for a keyed request: the id of the job that holds the key).
func (q *Queue) Enqueue(ctx context.Context, jobType string, payload any, options EnqueueOptions) (string, error) {
	r, err := q.EnqueueWithResult(ctx, jobType, payload, options)
	if err != nil {
		return "", err
	}
	return r.JobID, nil
}

// EnqueueWithResult enqueues one job and says what PostgreSQL decided.
func (q *Queue) EnqueueWithResult(ctx context.Context, jobType string, payload any, options EnqueueOptions) (EnqueueResult, error) {
	return q.enqueueOne(ctx, nil, jobType, payload, options)
}

// EnqueueTx enqueues one job inside the caller's transaction tx and returns its id: the job, its
// key and its wake-up commit or roll back with the caller's own writes (docs/clients-go.md, "Inside
// your transaction"). The decision is the same as Enqueue's, made in tx's snapshot; the call is
// never repeated after connection loss (the caller owns the transaction). A conflict
// (*EnqueueIdempotencyConflictError) or any other database error leaves tx aborted, as every SQL error does in
// PostgreSQL: roll it back, or enqueue inside a savepoint (tx.Begin) to go on without it.
func (q *Queue) EnqueueTx(ctx context.Context, tx pgx.Tx, jobType string, payload any, options EnqueueOptions) (string, error) {
	r, err := q.EnqueueWithResultTx(ctx, tx, jobType, payload, options)
	if err != nil {
		return "", err
	}
	return r.JobID, nil
}

// EnqueueWithResultTx is EnqueueTx saying what PostgreSQL decided.
func (q *Queue) EnqueueWithResultTx(ctx context.Context, tx pgx.Tx, jobType string, payload any, options EnqueueOptions) (EnqueueResult, error) {
	if tx == nil {
		return EnqueueResult{}, newValidationError(ValidationIssue{Option: "tx", Rule: "is required (a pgx.Tx from pool.Begin)"})
	}
	return q.enqueueOne(ctx, tx, jobType, payload, options)
}

func (q *Queue) enqueueOne(ctx context.Context, tx pgx.Tx, jobType string, payload any, options EnqueueOptions) (EnqueueResult, error) {
	if err := q.usable(); err != nil {
		return EnqueueResult{}, err
	}
	n, err := normalize(jobType, payload, options, q.maxPayload, q.source, "", q.now())
	if err != nil {
		return EnqueueResult{}, err
	}
	rs, err := q.run(ctx, []*normalizedRequest{n}, tx)
	if err != nil {
		return EnqueueResult{}, err
	}
	return rs[0], nil
}

// EnqueueMany enqueues up to 1000 requests in one round trip and returns their job ids in input
// order. Any conflict rolls back the whole batch.
func (q *Queue) EnqueueMany(ctx context.Context, requests []Request) ([]string, error) {
	return jobIDs(q.EnqueueManyWithResults(ctx, requests))
}

// EnqueueManyWithResults is EnqueueMany reporting each request's outcome.
func (q *Queue) EnqueueManyWithResults(ctx context.Context, requests []Request) ([]EnqueueResult, error) {
	return q.enqueueMany(ctx, nil, requests)
}

// EnqueueManyTx enqueues up to 1000 requests inside the caller's transaction tx, as EnqueueTx does
// one, and returns their job ids in input order.
func (q *Queue) EnqueueManyTx(ctx context.Context, tx pgx.Tx, requests []Request) ([]string, error) {
	return jobIDs(q.EnqueueManyWithResultsTx(ctx, tx, requests))
}

// jobIDs is the job id of each result, in order (nil with the error when there is one).
func jobIDs(rs []EnqueueResult, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.JobID
	}
	return ids, nil
}

// EnqueueManyWithResultsTx is EnqueueManyTx reporting each request's outcome.
func (q *Queue) EnqueueManyWithResultsTx(ctx context.Context, tx pgx.Tx, requests []Request) ([]EnqueueResult, error) {
	if tx == nil {
		return nil, newValidationError(ValidationIssue{Option: "tx", Rule: "is required (a pgx.Tx from pool.Begin)"})
	}
	return q.enqueueMany(ctx, tx, requests)
}

func (q *Queue) enqueueMany(ctx context.Context, tx pgx.Tx, requests []Request) ([]EnqueueResult, error) {
	if err := q.usable(); err != nil {
		return nil, err
	}
	if len(requests) > maxBatch {
		return nil, newValidationError(ValidationIssue{Option: "requests",
			Rule: fmt.Sprintf("at most %d requests per batch (got %d); split it", maxBatch, len(requests))})
	}
	if len(requests) == 0 {
		return []EnqueueResult{}, nil
	}
	ns := make([]*normalizedRequest, len(requests))
	total := 0
	now := q.now()
	for i, r := range requests {
		n, err := normalize(r.Type, r.Payload, r.Options, q.maxPayload, q.source, fmt.Sprintf("requests[%d]", i), now)
		if err != nil {
			return nil, err
		}
		total += len(n.PayloadJSON)
		if total > maxBatchPayloadBytes {
			return nil, newValidationError(ValidationIssue{Option: "requests",
				Rule: fmt.Sprintf("the payloads of one batch may total at most %d bytes; split the batch", maxBatchPayloadBytes)})
		}
		ns[i] = n
	}
	return q.run(ctx, ns, tx)
}
