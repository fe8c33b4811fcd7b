package workhorse

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// runWorker runs a worker over one fresh queue until stop is called; stop waits for Run to return.
func runWorker(t *testing.T, o WorkerOptions) (*Worker, func()) {
	t.Helper()
	pool := newPool(t)
	if o.PollInterval == 0 {
		o.PollInterval = 50 * time.Millisecond
	}
	w, err := NewWorker(pool, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return w, stop
}

// waitForState polls the job until it reaches state (or fails the test after 15 s).
func waitForState(t *testing.T, q *Queue, id, state string) *Job {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		j, err := q.GetJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j != nil && j.State == state {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %v, want %s", id, j, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWorkerRunsHandlersByTypeAndStoresResults(t *testing.T) {
	q, _ := newTestQueue(t)
	queue := unique("wq")
	id, err := q.Enqueue(context.Background(), "invoice.capture", invoice{"INV-1", 4200}, EnqueueOptions{Queue: Ptr(queue)})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := runWorker(t, WorkerOptions{Queues: []string{queue}, Handlers: map[string]Handler{
		"invoice.capture": func(ctx context.Context, job *ClaimedJob) (any, error) {
			var in invoice
			if err := json.Unmarshal(job.Payload, &in); err != nil {
				return nil, err
			}
			return map[string]any{"captured": in.AmountCents, "attempt": job.Attempt}, nil
		},
	}})
	j := waitForState(t, q, id, "succeeded")
	stop()
	if string(j.Result) != `{"attempt": 1, "captured": 4200}` || j.Attempt != 1 {
		t.Fatalf("result %s, attempt %d", j.Result, j.Attempt)
	}
}

func TestWorkerRetriesThenFails(t *testing.T) {
	q, _ := newTestQueue(t)
	queue := unique("wq")
	ctx := context.Background()
	flaky, _ := q.Enqueue(ctx, "flaky", 1, EnqueueOptions{Queue: Ptr(queue), RetryPolicy: FixedRetry(0)})
	doomed, _ := q.Enqueue(ctx, "doomed", 1, EnqueueOptions{Queue: Ptr(queue), MaxAttempts: Ptr(2), RetryPolicy: FixedRetry(0)})
	var calls int32
	w, stop := runWorker(t, WorkerOptions{Queues: []string{queue}, Handlers: map[string]Handler{
		"flaky": func(ctx context.Context, job *ClaimedJob) (any, error) {
			if atomic.AddInt32(&calls, 1) == 1 {
				return nil, errors.New("the card processor timed out")
			}
			return "ok", nil
		},
		"doomed": func(ctx context.Context, job *ClaimedJob) (any, error) { panic("always") },
	}})
	j := waitForState(t, q, flaky, "succeeded")
	if j.Attempt != 2 {
		t.Fatalf("attempt %d", j.Attempt)
	}
	d := waitForState(t, q, doomed, "failed")
	stop()
	var e struct{ Name, Message string }
	_ = json.Unmarshal(d.LastError, &e)
	if d.Attempt != 2 || e.Message != "handler panicked: always" {
		t.Fatalf("attempt %d, last error %s", d.Attempt, d.LastError)
	}
	if s := w.Stats(); s.Retried != 2 || s.Failed != 1 || s.Succeeded != 1 {
		t.Fatalf("%+v", s)
	}
}

func TestWorkerCheckpointReusesACommittedStage(t *testing.T) {
	q, _ := newTestQueue(t)
	queue := unique("wq")
	id, _ := q.Enqueue(context.Background(), "charge", 1, EnqueueOptions{Queue: Ptr(queue), RetryPolicy: FixedRetry(0)})
	var charges int32
	_, stop := runWorker(t, WorkerOptions{Queues: []string{queue}, Handlers: map[string]Handler{
		"charge": func(ctx context.Context, job *ClaimedJob) (any, error) {
			v, err := job.Checkpoint(ctx, "charge", func(ctx context.Context) (any, error) {
				return map[string]any{"chargeId": atomic.AddInt32(&charges, 1)}, nil
			})
			if err != nil {
				return nil, err
			}
			if job.Attempt == 1 {
				return nil, errors.New("crash after the charge")
			}
			return json.RawMessage(v), nil
		},
	}})
	j := waitForState(t, q, id, "succeeded")
	stop()
	if charges != 1 || string(j.Result) != `{"chargeId": 1}` {
		t.Fatalf("charged %d times, result %s", charges, j.Result)
	}
}

func TestWorkerExecutionTimeoutCancelsTheHandler(t *testing.T) {
	q, _ := newTestQueue(t)
	queue := unique("wq")
	id, _ := q.Enqueue(context.Background(), "slow", 1, EnqueueOptions{Queue: Ptr(queue), MaxAttempts: Ptr(1), ExecutionTimeout: Ptr(100 * time.Millisecond)})
	var reason atomic.Value
	_, stop := runWorker(t, WorkerOptions{Queues: []string{queue}, Handlers: map[string]Handler{
		"slow": func(ctx context.Context, job *ClaimedJob) (any, error) {
			<-ctx.Done()
			reason.Store(job.StopReason())
			return nil, ctx.Err()
		},
	}})
	j := waitForState(t, q, id, "failed")
	stop()
	if reason.Load() != ErrExecutionTimeout {
		t.Fatalf("stop reason %v", reason.Load())
	}
	// Recorded as the TypeScript worker records it: one cause, one dead-letter group, whichever
	// worker ran the attempt.
	var e struct{ Name, Message, Code string }
	_ = json.Unmarshal(j.LastError, &e)
	if e.Name != "ExecutionTimeoutError" || e.Message != "The attempt ran longer than its executionTimeoutMs (100 ms)." ||
		e.Code != "EXECUTION_TIMED_OUT" {
		t.Fatalf("last error %s", j.LastError)
	}
}

func TestWorkerDeadlineIsRecordedAsTheTypeScriptWorkerRecordsIt(t *testing.T) {
	q, _ := newTestQueue(t)
	queue := unique("wq")
	deadline := time.Now().Add(1500 * time.Millisecond).UTC().Truncate(time.Millisecond)
	id, _ := q.Enqueue(context.Background(), "late", 1, EnqueueOptions{Queue: Ptr(queue), MaxAttempts: Ptr(3), Deadline: Ptr(deadline)})
	_, stop := runWorker(t, WorkerOptions{Queues: []string{queue}, Handlers: map[string]Handler{
		"late": func(ctx context.Context, job *ClaimedJob) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}})
	j := waitForState(t, q, id, "failed")
	stop()
	var e struct{ Name, Message, Code string }
	_ = json.Unmarshal(j.LastError, &e)
	want := "The job's deadline (" + deadline.Format("2006-01-02T15:04:05.000Z") + ") passed."
	if e.Name != "DeadlineExceededError" || e.Message != want || e.Code != "DEADLINE_EXCEEDED" {
		t.Fatalf("last error %s, want DeadlineExceededError %q DEADLINE_EXCEEDED", j.LastError, want)
	}
}

func TestWorkerGracefulStopReleasesRunningJobs(t *testing.T) {
	q, _ := newTestQueue(t)
	queue := unique("wq")
	id, _ := q.Enqueue(context.Background(), "long", 1, EnqueueOptions{Queue: Ptr(queue)})
	started := make(chan struct{})
	w, stop := runWorker(t, WorkerOptions{Queues: []string{queue}, ShutdownGrace: 100 * time.Millisecond, Handlers: map[string]Handler{
		"long": func(ctx context.Context, job *ClaimedJob) (any, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}})
	<-started
	stop()
	j, _ := q.GetJob(context.Background(), id)
	if j.State != "ready" || j.Attempt != 0 || w.Stats().Released != 1 {
		t.Fatalf("state %s attempt %d stats %+v", j.State, j.Attempt, w.Stats())
	}
}

func TestWorkerOptionsAreChecked(t *testing.T) {
	pool := newPool(t)
	var v *EnqueueValidationError
	if _, err := NewWorker(pool, WorkerOptions{}); !errors.As(err, &v) || v.Option != "handlers" {
		t.Fatalf("%v", err)
	}
	h := map[string]Handler{"t": func(context.Context, *ClaimedJob) (any, error) { return nil, nil }}
	if _, err := NewWorker(pool, WorkerOptions{Handlers: h, Lease: time.Second, HeartbeatInterval: 2 * time.Second}); !errors.As(err, &v) || v.Option != "heartbeatInterval" {
		t.Fatalf("%v", err)
	}
	if _, err := NewWorker(pool, WorkerOptions{Handlers: h, AbortGrace: -time.Second}); !errors.As(err, &v) || v.Option != "abortGrace" {
		t.Fatalf("%v", err)
	}
}

func TestWorkerOperatorCancelAndLostLease(t *testing.T) {
	q, pool := newTestQueue(t)
	queue := unique("wq")
	ctx := context.Background()
	canceled, _ := q.Enqueue(ctx, "wait", 1, EnqueueOptions{Queue: Ptr(queue)})
	stolen, _ := q.Enqueue(ctx, "wait", 2, EnqueueOptions{Queue: Ptr(queue)})
	running := make(chan string, 2)
	reasons := make(chan error, 2)
	w, stop := runWorker(t, WorkerOptions{Queues: []string{queue}, Lease: 600 * time.Millisecond, Handlers: map[string]Handler{
		"wait": func(ctx context.Context, job *ClaimedJob) (any, error) {
			running <- job.ID
			<-ctx.Done()
			reasons <- job.StopReason()
			return nil, ctx.Err()
		},
	}})
	<-running
	<-running
	// An operator cancels one running job (seen at the next heartbeat); the other is taken over by
	// another owner with a lease of its own (an hour: no reaper hands it back before the test ends).
	if _, err := pool.Exec(ctx, "select * from workhorse.cancel_jobs(array[$1::uuid], 'go-tests', 'testing cancel')", canceled); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "update workhorse.job set lease_owner = 'someone-else', lease_expires_at = now() + interval '1 hour' where id = $1::uuid", stolen); err != nil {
		t.Fatal(err)
	}
	got := map[error]bool{}
	for len(got) < 2 {
		select {
		case r := <-reasons:
			got[r] = true
		case <-time.After(30 * time.Second):
			t.Fatalf("after 30 s the handlers have stopped for %v only: a cancel or a lost lease went unseen", got)
		}
	}
	if !got[ErrJobCanceled] || !got[ErrLeaseLost] {
		t.Fatalf("stop reasons %v", got)
	}
	waitForState(t, q, canceled, "canceled")
	stop()
	if j, _ := q.GetJob(ctx, stolen); j.State != "active" || w.Stats().Stale != 1 {
		t.Fatalf("the stolen job is %s (its new owner's), stats %+v", j.State, w.Stats())
	}
}
