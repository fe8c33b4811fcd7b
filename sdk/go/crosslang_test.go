package workhorse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cross-language cases: the TypeScript core (testdata/ts-client.ts through npx tsx) and this client
// enqueue the same requests against the same database; equal requests replay each other's jobs.

type tsAnswer struct {
	JobID             string   `json:"jobId"`
	Outcome           string   `json:"outcome"`
	KeyDigest         string   `json:"keyDigest"`
	Conflict          bool     `json:"conflict"`
	ExistingJobID     string   `json:"existingJobId"`
	ConflictingFields []string `json:"conflictingFields"`
	PayloadPaths      []string `json:"payloadPaths"`
}

func tsEnqueue(t *testing.T, request map[string]any) tsAnswer {
	t.Helper()
	body, _ := json.Marshal(request)
	out, err := tsx("sdk/go/testdata/ts-client.ts", string(body))
	if err != nil {
		t.Fatalf("ts-client: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var a tsAnswer
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &a); err != nil {
		t.Fatalf("ts-client said %q: %v", out, err)
	}
	return a
}

// The same request in both languages: every fingerprint field set, the payload in another key order
// and with 4200.0 on the Go side.
func crossRequest(key string, amount float64) (map[string]any, map[string]any, EnqueueOptions) {
	tsOptions := map[string]any{
		"queue":              "billing",
		"maxAttempts":        5,
		"retryPolicy":        map[string]any{"type": "exponential", "initialDelayMs": 100, "multiplier": 3, "maxDelayMs": 10000},
		"deadline":           "2999-06-01T00:00:00.000Z",
		"executionTimeoutMs": 30000,
		"concurrencyKey":     "customer-7",
		"tags":               []string{"vip", "eu", "vip"},
		"idempotency":        map[string]any{"key": key, "scope": "invoice-capture", "ttlMs": 3600000},
	}
	tsPayload := map[string]any{"invoiceId": key, "amountCents": 4200, "lines": []any{map[string]any{"sku": "A", "qty": 1}}}
	goPayload := map[string]any{"lines": []any{map[string]any{"qty": 1.0, "sku": "A"}}, "amountCents": amount, "invoiceId": key}
	deadline, _ := time.Parse(time.RFC3339, "2999-06-01T00:00:00Z")
	goOptions := EnqueueOptions{
		Queue: Ptr("billing"), MaxAttempts: Ptr(5), RetryPolicy: ExponentialRetry(100*time.Millisecond, 3, 10*time.Second),
		Deadline: Ptr(deadline), ExecutionTimeout: Ptr(30 * time.Second), ConcurrencyKey: Ptr("customer-7"), Tags: []string{"eu", "vip"},
		Idempotency: &Idempotency{Key: key, Scope: Ptr("invoice-capture"), TTL: Ptr(time.Hour)},
	}
	return map[string]any{"type": "invoice.capture", "payload": tsPayload, "options": tsOptions}, goPayload, goOptions
}

func TestCrossLanguageTypeScriptAcceptsGoReplays(t *testing.T) {
	q, _ := newTestQueue(t)
	key := unique("capture:INV")
	tsReq, goPayload, goOptions := crossRequest(key, 4200.0)
	ts := tsEnqueue(t, tsReq)
	if ts.Outcome != "accepted" {
		t.Fatalf("TypeScript: %+v", ts)
	}
	r, err := q.EnqueueWithResult(context.Background(), "invoice.capture", goPayload, goOptions)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != Replayed || r.JobID != ts.JobID || r.KeyDigest != ts.KeyDigest {
		t.Fatalf("Go: %+v, TypeScript: %+v", r, ts)
	}
}

func TestCrossLanguageGoAcceptsTypeScriptReplays(t *testing.T) {
	q, _ := newTestQueue(t)
	key := unique("capture:INV")
	tsReq, goPayload, goOptions := crossRequest(key, 4200.0)
	r, err := q.EnqueueWithResult(context.Background(), "invoice.capture", goPayload, goOptions)
	if err != nil || r.Outcome != Accepted {
		t.Fatalf("Go: %+v %v", r, err)
	}
	ts := tsEnqueue(t, tsReq)
	if ts.Outcome != "replayed" || ts.JobID != r.JobID || ts.KeyDigest != r.KeyDigest {
		t.Fatalf("TypeScript: %+v, Go: %+v", ts, r)
	}
}

func TestCrossLanguageConflictsNameThePayload(t *testing.T) {
	q, _ := newTestQueue(t)
	key := unique("capture:INV")
	tsReq, goPayload, goOptions := crossRequest(key, 9900)
	ts := tsEnqueue(t, tsReq)
	if ts.Outcome != "accepted" {
		t.Fatalf("TypeScript: %+v", ts)
	}
	_, err := q.Enqueue(context.Background(), "invoice.capture", goPayload, goOptions)
	var conflict *EnqueueIdempotencyConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("want a conflict, got %v", err)
	}
	if conflict.ExistingJobID != ts.JobID || strings.Join(conflict.ConflictingFields, ",") != "payload" ||
		strings.Join(conflict.PayloadPaths, ",") != "$.amountCents" || conflict.KeyDigest != ts.KeyDigest {
		t.Fatalf("conflict: %+v", conflict)
	}
	// And the other way round: Go's job, TypeScript's different request.
	key2 := unique("capture:INV")
	tsReq2, goPayload2, goOptions2 := crossRequest(key2, 9900)
	r, err := q.EnqueueWithResult(context.Background(), "invoice.capture", goPayload2, goOptions2)
	if err != nil || r.Outcome != Accepted {
		t.Fatalf("Go: %+v %v", r, err)
	}
	ts2 := tsEnqueue(t, tsReq2)
	if !ts2.Conflict || ts2.ExistingJobID != r.JobID || strings.Join(ts2.PayloadPaths, ",") != "$.amountCents" {
		t.Fatalf("TypeScript: %+v", ts2)
	}
}

// A job enqueued from Go runs on the Python worker (sdk/python/tests/worker_proc.py in its own
// process, Debian's python3 with psycopg): the same job row, claimed and completed through the same
// SQL functions, its result stored as JSON.
func TestCrossLanguageGoJobRunsOnThePythonWorker(t *testing.T) {
	q, _ := newTestQueue(t)
	ctx := context.Background()
	queue := unique("go-to-py")
	release := filepath.Join(t.TempDir(), "release")
	if err := os.WriteFile(release, nil, 0o644); err != nil { // the handler finishes at once
		t.Fatal(err)
	}
	key := unique("capture")
	id, err := q.Enqueue(ctx, "t.finish", map[string]any{"release": release}, EnqueueOptions{
		Queue: Ptr(queue), Idempotency: &Idempotency{Key: key, Scope: Ptr("go-to-py")},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"url": testURL, "queue": queue, "mode": "drain", "grace_ms": 2000})
	cmd := exec.Command("/usr/bin/python3", filepath.Join(repoRoot, "sdk", "python", "tests", "worker_proc.py"), string(cfg))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	deadline := time.Now().Add(60 * time.Second)
	var j *Job
	for time.Now().Before(deadline) {
		if j, err = q.GetJob(ctx, id); err != nil {
			t.Fatal(err)
		}
		if j != nil && j.State == "succeeded" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if j == nil || j.State != "succeeded" {
		t.Fatalf("the Python worker did not run the Go job: %+v\nworker output:\n%s", j, out.String())
	}
	var result map[string]any
	if err := json.Unmarshal(j.Result, &result); err != nil || result["finished"] != true {
		t.Fatalf("result %s (%v)", j.Result, err)
	}
	if j.Attempt != 1 {
		t.Fatalf("attempt %d, want 1", j.Attempt)
	}
}

// Key lifetimes (docs/enqueue.md): Go accepts a key held until its job finishes, TypeScript replays
// it while the job waits and runs, and once the job is completed through the worker SQL the key is
// TypeScript's to take; Go then replays TypeScript's new job.
func TestCrossLanguageHeldKeyReplaysAndIsReleased(t *testing.T) {
	q, pool := newTestQueue(t)
	ctx := context.Background()
	key, queue := unique("report"), unique("cross-hold")
	tsReq := map[string]any{"type": "report.nightly", "payload": map[string]any{"day": 1},
		"options": map[string]any{"queue": queue, "idempotency": map[string]any{"key": key, "scope": "reports", "holdUntil": "finished"}}}
	goOptions := EnqueueOptions{Queue: Ptr(queue), Idempotency: &Idempotency{Key: key, Scope: Ptr("reports"), HoldUntil: Ptr(HoldUntilFinished)}}
	first, err := q.EnqueueWithResult(ctx, "report.nightly", map[string]any{"day": 1.0}, goOptions)
	if err != nil || first.Outcome != Accepted {
		t.Fatalf("Go: %+v %v", first, err)
	}
	if ts := tsEnqueue(t, tsReq); ts.Outcome != "replayed" || ts.JobID != first.JobID {
		t.Fatalf("TypeScript while pending: %+v", ts)
	}
	var id string
	var attempt int
	if err := pool.QueryRow(ctx, "select id::text, attempt from workhorse.claim_jobs(array[$1], null, 'go~x', 1, 60000, false)", queue).
		Scan(&id, &attempt); err != nil || id != first.JobID {
		t.Fatalf("claim: %s %v", id, err)
	}
	if ts := tsEnqueue(t, tsReq); ts.Outcome != "replayed" || ts.JobID != first.JobID {
		t.Fatalf("TypeScript while running: %+v", ts)
	}
	if _, err := pool.Exec(ctx, "select * from workhorse.complete_jobs(array[$1::uuid], array[$2::integer], array['go~x'], array['null'::jsonb])",
		id, attempt); err != nil {
		t.Fatal(err)
	}
	next := tsEnqueue(t, tsReq)
	if next.Outcome != "accepted" || next.JobID == first.JobID {
		t.Fatalf("TypeScript after the finish: %+v", next)
	}
	again, err := q.EnqueueWithResult(ctx, "report.nightly", map[string]any{"day": 1.0}, goOptions)
	if err != nil || again.Outcome != Replayed || again.JobID != next.JobID {
		t.Fatalf("Go after the finish: %+v %v", again, err)
	}
}
