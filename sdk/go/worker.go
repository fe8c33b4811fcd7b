package workhorse

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// The worker runs jobs over the same SQL functions as the TypeScript worker (claim_jobs,
// heartbeat_jobs, complete_jobs, fail_job, cancel_attempt, release_jobs, save_checkpoint): every
// write is fenced by the attempt (job id, attempt number, lease token), so a stale attempt's write
// changes nothing.

// ClaimedJob is one attempt this worker holds, as its handler sees it.
type ClaimedJob struct {
	ID                 string
	Queue              string
	Type               string
	Payload            json.RawMessage
	Attempt            int
	MaxAttempts        int
	RunAt              time.Time
	Deadline           *time.Time
	ExecutionTimeoutMs *int64
	ConcurrencyKey     *string
	Tags               []string
	CreatedAt          time.Time
	LeaseExpiresAt     time.Time
	LeaseOwner         string

	w      *Worker
	cancel context.CancelFunc
	mu     sync.Mutex
	stop   error // why the handler's context was cancelled (nil while it runs undisturbed)
}

// Handler runs one attempt. Its context is cancelled when the attempt must stop (execution timeout,
// deadline, operator cancel, lost lease, shutdown); job.StopReason() says why. The result is stored
// as JSON; an error (or a panic) fails the attempt, which is retried by the job's retry policy.
// A handler that has not returned AbortGrace after its context was cancelled is abandoned: the
// worker records the outcome without it and frees its slot, and Go cannot stop a goroutine, so the
// handler's goroutine is left running (whatever it returns later is dropped).
type Handler func(ctx context.Context, job *ClaimedJob) (any, error)

// Why an attempt's context was cancelled (job.StopReason()).
var (
	ErrExecutionTimeout = errors.New("workhorse: the attempt ran longer than its execution timeout")
	ErrDeadlineExceeded = errors.New("workhorse: the job's deadline passed")
	ErrJobCanceled      = errors.New("workhorse: the job was canceled by an operator")
	ErrLeaseLost        = errors.New("workhorse: this attempt lost its lease; another attempt owns the job now")
	ErrWorkerStopping   = errors.New("workhorse: the worker is shutting down; the attempt will be released and run again")
)

// StopReason is why the handler's context was cancelled, or nil.
func (j *ClaimedJob) StopReason() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stop
}

func (j *ClaimedJob) interrupt(reason error) {
	j.mu.Lock()
	if j.stop == nil {
		j.stop = reason
	}
	j.mu.Unlock()
	j.cancel()
}

// Heartbeat extends this attempt's lease now (the worker also heartbeats on its own). It returns
// ErrLeaseLost when the attempt no longer holds the job.
func (j *ClaimedJob) Heartbeat(ctx context.Context) error {
	if errors.Is(j.StopReason(), ErrLeaseLost) {
		return ErrLeaseLost
	}
	rows, err := j.w.heartbeat(ctx, []*ClaimedJob{j})
	if err != nil {
		return newDatabaseError("heartbeat", err)
	}
	if len(rows) == 0 {
		j.interrupt(ErrLeaseLost)
		return ErrLeaseLost
	}
	if rows[0].cancelRequested {
		j.interrupt(ErrJobCanceled)
	}
	return nil
}

// Checkpoint runs fn once per job: when an earlier attempt of this job stored a value under name,
// that value comes back and fn is not run; otherwise fn's value is stored (as JSON) and returned.
func (j *ClaimedJob) Checkpoint(ctx context.Context, name string, fn func(ctx context.Context) (any, error)) (json.RawMessage, error) {
	if c := utf8Chars(name); c < 1 || c > 128 || hasControl(name) {
		return nil, errors.New("workhorse: checkpoint name must be 1..128 characters without control characters")
	}
	if errors.Is(j.StopReason(), ErrLeaseLost) {
		return nil, ErrLeaseLost
	}
	var stored *string
	err := j.w.persist(ctx, func(ctx context.Context) error {
		return j.w.pool.QueryRow(ctx, sqlReadCheckpoint, j.ID, name).Scan(&stored)
	})
	if err != nil && !isNoRows(err) {
		return nil, newDatabaseError("checkpoint", err)
	}
	if stored != nil {
		return json.RawMessage(*stored), nil
	}
	value, err := fn(ctx)
	if err != nil {
		return nil, err
	}
	text, err := resultJSON(value)
	if err != nil {
		return nil, fmt.Errorf("workhorse: checkpoint %q cannot be stored as JSON: %w", name, err)
	}
	var status string
	var saved *string
	err = j.w.persist(ctx, func(ctx context.Context) error {
		return j.w.pool.QueryRow(ctx, sqlSaveCheckpoint,
			j.ID, j.Attempt, j.LeaseOwner, name, text, int(j.w.lease.Milliseconds())).Scan(&status, &saved)
	})
	if isNoRows(err) || (err == nil && status == "stale") {
		j.interrupt(ErrLeaseLost)
		return nil, ErrLeaseLost
	}
	if err != nil {
		return nil, newDatabaseError("checkpoint", err)
	}
	if saved == nil {
		return json.RawMessage(text), nil
	}
	return json.RawMessage(*saved), nil
}

func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// WorkerOptions configure a Worker. Handlers (by job type) are required.
type WorkerOptions struct {
	Handlers map[string]Handler
	// Queues to claim from (default: "default").
	Queues []string
	// Concurrency: attempts run at once (default 10).
	Concurrency int
	// Lease: how long a claimed attempt is held without a heartbeat (default 30 s, at least 200 ms).
	Lease time.Duration
	// HeartbeatInterval: below Lease (default Lease/3).
	HeartbeatInterval time.Duration
	// PollInterval: how often to look for due jobs when there is no wake-up notification (default 1 s).
	PollInterval time.Duration
	// ShutdownGrace: how long a stopping worker lets running handlers finish before it cancels their
	// contexts and gives their jobs back (default 10 s).
	ShutdownGrace time.Duration
	// AbortGrace: how long a handler may take to return after its context was cancelled (execution
	// timeout, deadline, operator cancel, lost lease, shutdown) before it is abandoned: its lease is
	// no longer renewed, the outcome is recorded (failed with the timeout or deadline, canceled,
	// released on shutdown; nothing after a lost lease) and its slot is freed, while its goroutine
	// is left behind (default 5 s, 1ms..1h, as the TypeScript and Python workers' abortGraceMs).
	AbortGrace time.Duration
	// DefaultRetryPolicy for jobs without one (default: 1 s, doubling, capped at 1 h).
	DefaultRetryPolicy *RetryPolicy
	// WorkerID names this worker in lease tokens (default host/pid/random).
	WorkerID string
	// OnError hears database errors the worker retried or gave up on (default: none).
	OnError func(error)
}

// WorkerStats counts what a worker recorded.
type WorkerStats struct {
	Claimed, Succeeded, Retried, Failed, Canceled, Released, Stale int
	// Abandoned: attempts whose handler had not returned AbortGrace after its context was cancelled.
	Abandoned int
}

// Worker claims due jobs with leases and runs their handlers.
type Worker struct {
	pool          *pgxpool.Pool
	handlers      map[string]Handler
	types         []string
	queues        []string
	concurrency   int
	lease         time.Duration
	heartbeatIvl  time.Duration
	poll          time.Duration
	grace         time.Duration
	abortGrace    time.Duration
	defaultPolicy string
	workerID      string
	onError       func(error)
	claimSeq      uint64

	mu      sync.Mutex
	running map[string]*ClaimedJob
	stats   WorkerStats
	wake    chan struct{}
}

// NewWorker checks the options and makes a worker; Run starts it.
func NewWorker(pool *pgxpool.Pool, o WorkerOptions) (*Worker, error) {
	if pool == nil {
		return nil, newValidationError(ValidationIssue{Option: "pool", Rule: "must be a *pgxpool.Pool"})
	}
	if len(o.Handlers) == 0 {
		return nil, newValidationError(ValidationIssue{Option: "handlers", Rule: "must name at least one job type"})
	}
	w := &Worker{pool: pool, handlers: o.Handlers, queues: o.Queues, concurrency: o.Concurrency, lease: o.Lease,
		heartbeatIvl: o.HeartbeatInterval, poll: o.PollInterval, grace: o.ShutdownGrace, abortGrace: o.AbortGrace, workerID: o.WorkerID,
		onError: o.OnError, running: map[string]*ClaimedJob{}, wake: make(chan struct{}, 1)}
	for t := range o.Handlers {
		w.types = append(w.types, t)
	}
	if len(w.queues) == 0 {
		w.queues = []string{defaultQueue}
	}
	if w.concurrency == 0 {
		w.concurrency = 10
	}
	if w.lease == 0 {
		w.lease = 30 * time.Second
	}
	if w.heartbeatIvl == 0 {
		w.heartbeatIvl = w.lease / 3
	}
	if w.poll == 0 {
		w.poll = time.Second
	}
	if w.grace == 0 {
		w.grace = 10 * time.Second
	}
	if w.abortGrace == 0 {
		w.abortGrace = 5 * time.Second
	}
	switch {
	case w.concurrency < 1 || w.concurrency > 1000:
		return nil, newValidationError(ValidationIssue{Option: "concurrency", Rule: "must be 1..1000"})
	case w.lease < 200*time.Millisecond || w.lease > 24*time.Hour:
		return nil, newValidationError(ValidationIssue{Option: "lease", Rule: "must be 200ms..24h"})
	case w.heartbeatIvl <= 0 || w.heartbeatIvl >= w.lease:
		return nil, newValidationError(ValidationIssue{Option: "heartbeatInterval", Rule: "must be above 0 and below lease"})
	case w.abortGrace < time.Millisecond || w.abortGrace > time.Hour:
		return nil, newValidationError(ValidationIssue{Option: "abortGrace", Rule: "must be 1ms..1h"})
	}
	var is issues
	for _, q := range w.queues {
		checkName(&is, "queues", q)
	}
	for _, t := range w.types {
		checkName(&is, "handlers", t)
	}
	policy := &normalizedRetryPolicy{InitialDelayMs: 1000, Multiplier: 2, MaxDelayMs: 3_600_000}
	if p := o.DefaultRetryPolicy; p != nil {
		n, err := normalize("t", nil, EnqueueOptions{RetryPolicy: p}, defaultPayloadBytes, "", "", time.Now())
		if err != nil {
			return nil, err
		}
		policy = n.RetryPolicy
	}
	if len(is) > 0 {
		return nil, newValidationError(is...)
	}
	w.defaultPolicy = policy.json()
	if w.workerID == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		w.workerID = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	var seed [5]byte
	_, _ = rand.Read(seed[:])
	for _, b := range seed {
		w.claimSeq = w.claimSeq<<8 | uint64(b)
	}
	return w, nil
}

// Stats returns what the worker recorded so far.
func (w *Worker) Stats() WorkerStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

func (w *Worker) count(f func(*WorkerStats)) {
	w.mu.Lock()
	f(&w.stats)
	w.mu.Unlock()
}

func (w *Worker) report(err error) {
	if w.onError != nil && err != nil {
		w.onError(err)
	}
}

// Run claims and runs jobs until ctx is cancelled, then stops gracefully: it claims nothing more,
// lets running handlers finish for ShutdownGrace, then cancels their contexts (ErrWorkerStopping)
// and gives their jobs back (ready again, the attempt not counted). It returns when every attempt
// is settled: at most ShutdownGrace + AbortGrace (and the release writes) after ctx is cancelled,
// since a handler that ignores its context is abandoned after AbortGrace (its goroutine left running).
func (w *Worker) Run(ctx context.Context) error {
	var handlers sync.WaitGroup
	bg, stopBackground := context.WithCancel(context.Background())
	defer stopBackground()
	go w.listen(bg)
	heartbeats := time.NewTicker(w.heartbeatIvl)
	defer heartbeats.Stop()
	go func() {
		for {
			select {
			case <-bg.Done():
				return
			case <-heartbeats.C:
				w.heartbeatAll(bg)
			}
		}
	}()
	slots := make(chan struct{}, w.concurrency)
	lastReap := time.Time{}
	for ctx.Err() == nil {
		free := w.concurrency - len(slots)
		claimed := 0
		if free > 0 {
			reap := time.Since(lastReap) >= time.Second
			// Not the caller's ctx: a claim that commits must also be read, or its leases just lapse.
			claimCtx, cancelClaim := context.WithTimeout(bg, w.lease)
			jobs, err := w.claim(claimCtx, free, reap)
			cancelClaim()
			if err != nil && ctx.Err() == nil {
				w.report(newDatabaseError("claim", err))
			}
			if reap && err == nil {
				lastReap = time.Now()
			}
			for _, j := range jobs {
				slots <- struct{}{}
				handlers.Add(1)
				go func(j *ClaimedJob) {
					defer handlers.Done()
					defer func() { <-slots }()
					w.runAttempt(j)
				}(j)
			}
			claimed = len(jobs)
		}
		if claimed == free && free > 0 {
			continue // there may be more due jobs
		}
		t := time.NewTimer(w.poll)
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-t.C:
		}
		t.Stop()
	}
	// Graceful stop: wait for the grace period, then interrupt what still runs.
	done := make(chan struct{})
	go func() { handlers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.grace):
		w.mu.Lock()
		for _, j := range w.running {
			j.interrupt(ErrWorkerStopping)
		}
		w.mu.Unlock()
		<-done
	}
	return nil
}

// listen wakes the claim loop on workhorse_jobs notifications (best effort: polling also finds jobs).
func (w *Worker) listen(ctx context.Context) {
	for ctx.Err() == nil {
		conn, err := w.pool.Acquire(ctx)
		if err == nil {
			if _, err = conn.Exec(ctx, "listen workhorse_jobs"); err == nil {
				for {
					if _, err = conn.Conn().WaitForNotification(ctx); err != nil {
						break
					}
					select {
					case w.wake <- struct{}{}:
					default:
					}
				}
			}
			// The connection may hold a LISTEN or be broken: never return it to the pool as is.
			_ = conn.Conn().Close(context.Background())
			conn.Release()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (w *Worker) claim(ctx context.Context, limit int, reap bool) ([]*ClaimedJob, error) {
	w.mu.Lock()
	w.claimSeq++
	token := fmt.Sprintf("%s~%s", w.workerID, strings.ToLower(fmt.Sprintf("%x", w.claimSeq)))
	w.mu.Unlock()
	rows, err := w.pool.Query(ctx, sqlClaimJobs,
		w.queues, w.types, token, limit, int(w.lease.Milliseconds()), reap)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var jobs []*ClaimedJob
	for rows.Next() {
		j := &ClaimedJob{LeaseOwner: token, w: w}
		var payload string
		if err := rows.Scan(&j.ID, &j.Queue, &j.Type, &payload, &j.Attempt, &j.MaxAttempts, &j.RunAt, &j.Deadline,
			&j.ExecutionTimeoutMs, &j.ConcurrencyKey, &j.Tags, &j.CreatedAt, &j.LeaseExpiresAt); err != nil {
			return nil, err
		}
		j.Payload = json.RawMessage(payload)
		jobs = append(jobs, j)
	}
	w.count(func(s *WorkerStats) { s.Claimed += len(jobs) })
	return jobs, rows.Err()
}

type heartbeatRow struct {
	id              string
	leaseOwner      string
	cancelRequested bool
}

func (w *Worker) heartbeat(ctx context.Context, jobs []*ClaimedJob) ([]heartbeatRow, error) {
	ids, attempts, owners := make([]string, len(jobs)), make([]int32, len(jobs)), make([]string, len(jobs))
	for i, j := range jobs {
		ids[i], attempts[i], owners[i] = j.ID, int32(j.Attempt), j.LeaseOwner
	}
	rows, err := w.pool.Query(ctx, sqlHeartbeatJobs,
		ids, attempts, owners, int(w.lease.Milliseconds()))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []heartbeatRow
	for rows.Next() {
		var r heartbeatRow
		if err := rows.Scan(&r.id, &r.leaseOwner, &r.cancelRequested); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// heartbeatAll extends every running attempt's lease; an attempt missing from the answer lost its
// lease, one flagged by an operator is cancelled.
func (w *Worker) heartbeatAll(ctx context.Context) {
	w.mu.Lock()
	jobs := make([]*ClaimedJob, 0, len(w.running))
	for _, j := range w.running {
		jobs = append(jobs, j)
	}
	w.mu.Unlock()
	if len(jobs) == 0 {
		return
	}
	// A heartbeat may take as long as a lease (a slow server, a busy Citus cluster): cut off at the
	// interval, every heartbeat of a loaded cluster failed and no lost lease or cancel was ever seen.
	c, cancel := context.WithTimeout(ctx, w.lease)
	defer cancel()
	rows, err := w.heartbeat(c, jobs)
	if err != nil {
		w.report(newDatabaseError("heartbeat", err)) // the lease runs on; the next heartbeat tries again
		return
	}
	held := map[string]heartbeatRow{}
	for _, r := range rows {
		held[r.id+"/"+r.leaseOwner] = r
	}
	for _, j := range jobs {
		r, ok := held[j.ID+"/"+j.LeaseOwner]
		switch {
		case !ok:
			j.interrupt(ErrLeaseLost)
		case r.cancelRequested:
			j.interrupt(ErrJobCanceled)
		}
	}
}

// persist runs a write until it succeeds or fails for good (transient errors are retried with
// backoff, at most 10 tries, honouring ctx).
func (w *Worker) persist(ctx context.Context, op func(ctx context.Context) error) error {
	delay := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil || isNoRows(err) || !isRetryable(err) || attempt >= 10 || ctx.Err() != nil {
			return err
		}
		w.report(newDatabaseError("worker write (retrying)", err))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		if delay *= 2; delay > 5*time.Second {
			delay = 5 * time.Second
		}
	}
}

// resultJSON is a handler's result or a checkpoint value as JSON text (nil is null).
func resultJSON(v any) (string, error) {
	if v == nil {
		return "null", nil
	}
	cp, err := encodePayload(v, defaultPayloadBytes, "result")
	if err != nil {
		return "", err
	}
	return cp.Text, nil
}

// errorSummary is the bounded error the job records ({name, message}), as the TypeScript worker's.
// recordedError is a stop cause as the TypeScript worker records it (its error's name, code and
// message), so one cause is one dead-letter group whichever language's worker ran the attempt.
type recordedError struct{ name, code, message string }

func (e recordedError) Error() string { return e.message }

func errorSummary(err error) string {
	if r, ok := err.(recordedError); ok {
		b, _ := json.Marshal(map[string]any{"name": r.name, "message": r.message, "code": r.code})
		return string(b)
	}
	name := reflect.TypeOf(err).String()
	name = strings.TrimPrefix(name, "*")
	clean := func(s string, max int) string {
		s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
		if r := []rune(s); len(r) > max {
			return string(r[:max-1]) + "…"
		}
		return s
	}
	summary := map[string]any{"name": clean(name, 128), "message": clean(err.Error(), 1000)}
	if u := errors.Unwrap(err); u != nil {
		summary["cause"] = map[string]any{"name": clean(strings.TrimPrefix(reflect.TypeOf(u).String(), "*"), 128), "message": clean(u.Error(), 1000)}
	}
	b, _ := json.Marshal(summary)
	return string(b)
}

type panicError struct{ value any }

func (p panicError) Error() string { return fmt.Sprintf("handler panicked: %v", p.value) }

// runAttempt runs one attempt's handler and records what came of it.
func (w *Worker) runAttempt(j *ClaimedJob) {
	ctx, cancel := context.WithCancel(context.Background())
	j.cancel = cancel
	defer cancel()
	w.mu.Lock()
	w.running[j.ID] = j
	w.mu.Unlock()
	defer w.forget(j)
	if ms := j.ExecutionTimeoutMs; ms != nil {
		t := time.AfterFunc(time.Duration(*ms)*time.Millisecond, func() { j.interrupt(ErrExecutionTimeout) })
		defer t.Stop()
	}
	if d := j.Deadline; d != nil {
		t := time.AfterFunc(time.Until(*d), func() { j.interrupt(ErrDeadlineExceeded) })
		defer t.Stop()
	}
	type returned struct {
		result any
		err    error
	}
	// Buffered: an abandoned handler's late return goes nowhere and its goroutine ends.
	done := make(chan returned, 1)
	go func() {
		var r returned
		defer func() {
			if p := recover(); p != nil {
				r.err = panicError{p}
			}
			done <- r
		}()
		r.result, r.err = w.handlers[j.Type](ctx, j)
	}()
	var r returned
	select {
	case r = <-done:
	case <-ctx.Done(): // interrupted: the handler has AbortGrace to return
		t := time.NewTimer(w.abortGrace)
		select {
		case r = <-done:
		case <-t.C:
			// Abandoned: no more heartbeats for it; the outcome is recorded below by its stop reason.
			w.forget(j)
			w.count(func(s *WorkerStats) { s.Abandoned++ })
			r.err = fmt.Errorf("workhorse: the handler did not return within AbortGrace (%v) after its context was cancelled (%w); it was abandoned", w.abortGrace, j.StopReason())
			w.report(r.err)
		}
		t.Stop()
	}
	result, err := r.result, r.err
	write, cancelWrite := context.WithTimeout(context.Background(), w.lease)
	defer cancelWrite()
	stop := j.StopReason()
	switch {
	case errors.Is(stop, ErrLeaseLost):
		w.count(func(s *WorkerStats) { s.Stale++ }) // another attempt owns the job: record nothing
	case errors.Is(stop, ErrWorkerStopping):
		var id *string
		perr := w.persist(write, func(ctx context.Context) error {
			return w.pool.QueryRow(ctx, sqlReleaseJobs,
				[]string{j.ID}, []int32{int32(j.Attempt)}, []string{j.LeaseOwner}, "shutdown").Scan(&id)
		})
		if perr == nil {
			w.count(func(s *WorkerStats) { s.Released++ })
		} else if !isNoRows(perr) {
			w.report(newDatabaseError("release", perr))
		}
	case errors.Is(stop, ErrJobCanceled):
		var id *string
		perr := w.persist(write, func(ctx context.Context) error {
			return w.pool.QueryRow(ctx, sqlCancelAttempt, j.ID, j.Attempt, j.LeaseOwner).Scan(&id)
		})
		switch {
		case perr == nil:
			w.count(func(s *WorkerStats) { s.Canceled++ })
		case isNoRows(perr):
			w.count(func(s *WorkerStats) { s.Stale++ })
		default:
			w.report(newDatabaseError("cancel", perr))
		}
	case err == nil && stop == nil:
		text, rerr := resultJSON(result)
		if rerr != nil {
			w.fail(write, j, fmt.Errorf("workhorse: the handler's result cannot be stored as JSON: %w", rerr), "error")
			return
		}
		var id *string
		perr := w.persist(write, func(ctx context.Context) error {
			return w.pool.QueryRow(ctx, sqlCompleteJobs,
				[]string{j.ID}, []int32{int32(j.Attempt)}, []string{j.LeaseOwner}, [][]byte{[]byte(text)}).Scan(&id)
		})
		switch {
		case perr == nil:
			w.count(func(s *WorkerStats) { s.Succeeded++ })
		case isNoRows(perr):
			w.count(func(s *WorkerStats) { s.Stale++ })
		default:
			w.report(newDatabaseError("complete", perr))
		}
	default:
		cause := "error"
		switch {
		case errors.Is(stop, ErrExecutionTimeout) && j.ExecutionTimeoutMs != nil:
			cause, err = "execution_timed_out", recordedError{"ExecutionTimeoutError", "EXECUTION_TIMED_OUT",
				fmt.Sprintf("The attempt ran longer than its executionTimeoutMs (%d ms).", *j.ExecutionTimeoutMs)}
		case errors.Is(stop, ErrDeadlineExceeded) && j.Deadline != nil:
			cause, err = "deadline_exceeded", recordedError{"DeadlineExceededError", "DEADLINE_EXCEEDED",
				fmt.Sprintf("The job's deadline (%s) passed.", j.Deadline.UTC().Format("2006-01-02T15:04:05.000Z"))}
		}
		w.fail(write, j, err, cause)
	}
}

// forget stops heartbeating an attempt. Only this attempt: once its outcome is written, a retry of
// the same job may already run here under the same id.
func (w *Worker) forget(j *ClaimedJob) {
	w.mu.Lock()
	if w.running[j.ID] == j {
		delete(w.running, j.ID)
	}
	w.mu.Unlock()
}

func (w *Worker) fail(ctx context.Context, j *ClaimedJob, err error, cause string) {
	var state string
	perr := w.persist(ctx, func(ctx context.Context) error {
		return w.pool.QueryRow(ctx, sqlFailJob,
			j.ID, j.Attempt, j.LeaseOwner, errorSummary(err), cause, w.defaultPolicy).Scan(&state)
	})
	switch {
	case isNoRows(perr):
		w.count(func(s *WorkerStats) { s.Stale++ })
	case perr != nil:
		w.report(newDatabaseError("fail", perr))
	case state == "failed":
		w.count(func(s *WorkerStats) { s.Failed++ })
	case state == "canceled":
		w.count(func(s *WorkerStats) { s.Canceled++ })
	default:
		w.count(func(s *WorkerStats) { s.Retried++ })
	}
}
