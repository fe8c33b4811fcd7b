package workhorse

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type invoice struct {
	InvoiceID   string `json:"invoiceId"`
	AmountCents int    `json:"amountCents"`
}

func TestEnqueueAcceptsReplaysAndConflicts(t *testing.T) {
	q, pool := newTestQueue(t)
	ctx := context.Background()
	inv := unique("INV")
	opts := EnqueueOptions{Queue: Ptr("billing"), Idempotency: &Idempotency{Key: "capture:" + inv, Scope: Ptr("invoice-capture"), TTL: Ptr(24 * time.Hour)}}

	first, err := q.EnqueueWithResult(ctx, "invoice.capture", invoice{inv, 4200}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if first.Outcome != Accepted || first.JobID == "" || first.KeyLength != len("capture:"+inv) {
		t.Fatalf("first: %+v", first)
	}
	// The same request, keys in another order and 4200.0 as a float: a replay of the same job.
	again, err := q.EnqueueWithResult(ctx, "invoice.capture", map[string]any{"amountCents": 4200.0, "invoiceId": inv}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Outcome != Replayed || again.JobID != first.JobID {
		t.Fatalf("again: %+v, want replay of %s", again, first.JobID)
	}
	// A different amount: a conflict naming the payload and its path.
	_, err = q.Enqueue(ctx, "invoice.capture", invoice{inv, 9900}, opts)
	var conflict *EnqueueIdempotencyConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("want a conflict, got %v", err)
	}
	if conflict.ExistingJobID != first.JobID || strings.Join(conflict.ConflictingFields, ",") != "payload" ||
		strings.Join(conflict.PayloadPaths, ",") != "$.amountCents" || conflict.KeyDigest != first.KeyDigest ||
		conflict.KeyPreview != first.KeyPreview || conflict.Ordinal != 1 || conflict.ExistingMode != "idempotency" {
		t.Fatalf("conflict: %+v", conflict)
	}
	if strings.Contains(conflict.Error(), inv) {
		t.Fatalf("the conflict's message shows the raw key: %s", conflict.Error())
	}
	if n := countRows(t, pool, "select count(*)::int from workhorse.job where id = $1::uuid", first.JobID); n != 1 {
		t.Fatalf("%d jobs", n)
	}

	job, err := q.GetJob(ctx, first.JobID)
	if err != nil || job == nil {
		t.Fatalf("getJob: %v %v", job, err)
	}
	if job.Queue != "billing" || job.Type != "invoice.capture" || job.State != "ready" || job.MaxAttempts != 25 ||
		string(job.Payload) != `{"invoiceId": "`+inv+`", "amountCents": 4200}` {
		t.Fatalf("job: %+v payload %s", job, job.Payload)
	}
	missing, err := q.GetJob(ctx, "00000000-0000-7000-8000-000000000000")
	if err != nil || missing != nil {
		t.Fatalf("missing job: %v %v", missing, err)
	}

	b, err := q.FindBinding(ctx, "capture:"+inv, "invoice-capture")
	if err != nil || b == nil {
		t.Fatalf("findBinding: %v %v", b, err)
	}
	if b.JobID != first.JobID || b.KeyDigest != first.KeyDigest || b.Mode != "idempotency" || b.Expired || b.TTLMs != 86_400_000 {
		t.Fatalf("binding: %+v", b)
	}
	none, err := q.FindBinding(ctx, "never-bound-"+inv, "invoice-capture")
	if err != nil || none != nil {
		t.Fatalf("unbound key: %v %v", none, err)
	}
	d, err := q.DescribeKey(ctx, "capture:"+inv, "invoice-capture")
	if err != nil || d.KeyDigest != first.KeyDigest || d.KeyPreview != first.KeyPreview || d.KeyLength != first.KeyLength {
		t.Fatalf("describeKey: %+v %v", d, err)
	}

	// The replay and the conflict reach the observation log once the queue is closed (flushed).
	q.Close()
	if n := countRows(t, pool, "select count(*)::int from workhorse.enqueue_observation where job_id = $1::uuid and outcome in ('replayed','conflict')", first.JobID); n != 2 {
		t.Fatalf("%d observations, want 2", n)
	}
	if _, err := q.Enqueue(ctx, "x", nil, EnqueueOptions{}); !errors.Is(err, ErrQueueClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func TestUnkeyedRequestsAlwaysCreateJobs(t *testing.T) {
	q, _ := newTestQueue(t)
	ctx := context.Background()
	a, err := q.Enqueue(ctx, "email.send", map[string]any{"to": "a@example.com"}, EnqueueOptions{Tags: []string{"b", "a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := q.Enqueue(ctx, "email.send", map[string]any{"to": "a@example.com"}, EnqueueOptions{})
	if err != nil || a == b {
		t.Fatalf("%s %s %v", a, b, err)
	}
	job, _ := q.GetJob(ctx, a)
	if strings.Join(job.Tags, ",") != "a,b" || job.Queue != "default" {
		t.Fatalf("job: %+v", job)
	}
}

func TestEnqueueManyInInputOrder(t *testing.T) {
	q, pool := newTestQueue(t)
	ctx := context.Background()
	k := unique("batch")
	idem := &Idempotency{Key: k, Scope: Ptr("s")}
	rs, err := q.EnqueueManyWithResults(ctx, []Request{
		{Type: "t", Payload: 1, Options: EnqueueOptions{Idempotency: idem}},
		{Type: "t", Payload: map[string]any{"x": 1}},
		{Type: "t", Payload: 1.0, Options: EnqueueOptions{Idempotency: idem}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Outcome != Accepted || rs[2].JobID != rs[0].JobID || rs[1].JobID == rs[0].JobID || rs[1].KeyDigest != "" {
		t.Fatalf("%+v", rs)
	}
	// A conflict in a batch rolls back all of it and names its ordinal.
	fresh := unique("fresh")
	_, err = q.EnqueueMany(ctx, []Request{
		{Type: "t", Payload: 1, Options: EnqueueOptions{Idempotency: &Idempotency{Key: fresh}}},
		{Type: "t", Payload: 2, Options: EnqueueOptions{Idempotency: idem}},
	})
	var conflict *EnqueueIdempotencyConflictError
	if !errors.As(err, &conflict) || conflict.Ordinal != 2 || conflict.ExistingJobID != rs[0].JobID {
		t.Fatalf("want conflict at ordinal 2, got %v", err)
	}
	if b, _ := q.FindBinding(ctx, fresh, ""); b != nil {
		t.Fatalf("the batch's first request was kept: %+v", b)
	}
	_ = pool
	ids, err := q.EnqueueMany(ctx, nil)
	if err != nil || len(ids) != 0 {
		t.Fatalf("%v %v", ids, err)
	}
}

func TestDebounceAndThrottleOutcomes(t *testing.T) {
	q, _ := newTestQueue(t)
	ctx := context.Background()
	k := unique("deb")
	a, err := q.EnqueueWithResult(ctx, "search.reindex", map[string]any{"v": 1}, EnqueueOptions{Debounce: &Debounce{Key: k, Window: time.Minute}})
	if err != nil || a.Outcome != Accepted {
		t.Fatalf("%+v %v", a, err)
	}
	b, err := q.EnqueueWithResult(ctx, "search.reindex", map[string]any{"v": 2}, EnqueueOptions{Debounce: &Debounce{Key: k, Window: time.Minute}})
	if err != nil || b.Outcome != Replaced || b.JobID != a.JobID {
		t.Fatalf("%+v %v", b, err)
	}
	job, _ := q.GetJob(ctx, a.JobID)
	if string(job.Payload) != `{"v": 2}` || job.State != "scheduled" {
		t.Fatalf("%+v", job)
	}
	// The key is held by debounce: idempotency conflicts on mode, a debounce on an idempotency key is non_replaceable.
	_, err = q.Enqueue(ctx, "search.reindex", map[string]any{"v": 2}, EnqueueOptions{Idempotency: &Idempotency{Key: k}})
	var conflict *EnqueueIdempotencyConflictError
	if !errors.As(err, &conflict) || !contains(conflict.ConflictingFields, "mode") {
		t.Fatalf("want a mode conflict, got %v", err)
	}
	ik := unique("idem")
	first, _ := q.EnqueueWithResult(ctx, "t", 1, EnqueueOptions{Idempotency: &Idempotency{Key: ik}})
	nr, err := q.EnqueueWithResult(ctx, "t", 1, EnqueueOptions{Debounce: &Debounce{Key: ik, Window: time.Second}})
	if err != nil || nr.Outcome != NonReplaceable || nr.Reason != "incompatible_key_mode" || nr.JobID != first.JobID {
		t.Fatalf("%+v %v", nr, err)
	}

	tk := unique("thr")
	t1, err := q.EnqueueWithResult(ctx, "t", 1, EnqueueOptions{Throttle: &Throttle{Key: tk, Window: time.Minute}})
	if err != nil || t1.Outcome != Accepted {
		t.Fatalf("%+v %v", t1, err)
	}
	t2, err := q.EnqueueWithResult(ctx, "t", 1, EnqueueOptions{Throttle: &Throttle{Key: tk, Window: time.Minute}})
	if err != nil || t2.Outcome != Coalesced || t2.JobID != t1.JobID {
		t.Fatalf("%+v %v", t2, err)
	}
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func TestBadInputIsTypedAndWritesNothing(t *testing.T) {
	q, pool := newTestQueue(t)
	ctx := context.Background()
	before := countRows(t, pool, "select count(*)::int from workhorse.job")
	ch := make(chan int)
	deep := any(1)
	for i := 0; i < 101; i++ {
		deep = []any{deep}
	}
	cases := []struct {
		name    string
		typ     string
		payload any
		opts    EnqueueOptions
		option  string
	}{
		{"empty type", "", 1, EnqueueOptions{}, "type"},
		{"control char in type", "a\nb", 1, EnqueueOptions{}, "type"},
		{"long queue", "t", 1, EnqueueOptions{Queue: Ptr(strings.Repeat("q", 129))}, "options.queue"},
		{"empty key", "t", 1, EnqueueOptions{Idempotency: &Idempotency{Key: ""}}, "options.idempotency.key"},
		{"long key", "t", 1, EnqueueOptions{Idempotency: &Idempotency{Key: strings.Repeat("k", 513)}}, "options.idempotency.key"},
		{"long scope", "t", 1, EnqueueOptions{Idempotency: &Idempotency{Key: "k", Scope: Ptr(strings.Repeat("s", 257))}}, "options.idempotency.scope"},
		{"ttl over a year", "t", 1, EnqueueOptions{Idempotency: &Idempotency{Key: "k", TTL: Ptr(366 * 24 * time.Hour)}}, "options.idempotency.ttlMs"},
		{"ttl not whole ms", "t", 1, EnqueueOptions{Idempotency: &Idempotency{Key: "k", TTL: Ptr(time.Microsecond)}}, "options.idempotency.ttlMs"},
		{"negative ttl", "t", 1, EnqueueOptions{Idempotency: &Idempotency{Key: "k", TTL: Ptr(-time.Second)}}, "options.idempotency.ttlMs"},
		{"two modes", "t", 1, EnqueueOptions{Idempotency: &Idempotency{Key: "k"}, Throttle: &Throttle{Key: "k", Window: time.Second}}, "options.throttle"},
		{"max attempts", "t", 1, EnqueueOptions{MaxAttempts: Ptr(1001)}, "options.maxAttempts"},
		{"too many tags", "t", 1, EnqueueOptions{Tags: strings.Split(strings.Repeat("x,", 32)+"x", ",")}, "options.tags"},
		{"deadline before runAt", "t", 1, EnqueueOptions{RunAt: Ptr(time.Now().Add(time.Hour)), Deadline: Ptr(time.Now())}, "options.deadline"},
		{"debounce with runAt", "t", 1, EnqueueOptions{RunAt: Ptr(time.Now()), Debounce: &Debounce{Key: "k", Window: time.Second}}, "options.runAt"},
		{"maxWait under window", "t", 1, EnqueueOptions{Debounce: &Debounce{Key: "k", Window: time.Minute, MaxWait: Ptr(time.Second)}}, "options.debounce.maxWaitMs"},
		{"bad retry policy", "t", 1, EnqueueOptions{RetryPolicy: &RetryPolicy{Type: "linear"}}, "options.retryPolicy.type"},
		// A pointer to a zero value is given: refused as TypeScript and Python refuse it, never a default.
		{"explicit maxAttempts 0", "t", 1, EnqueueOptions{MaxAttempts: Ptr(0)}, "options.maxAttempts"},
		{"explicit empty queue", "t", 1, EnqueueOptions{Queue: Ptr("")}, "options.queue"},
		{"explicit ttl 0", "t", 1, EnqueueOptions{Idempotency: &Idempotency{Key: "k", TTL: Ptr(time.Duration(0))}}, "options.idempotency.ttlMs"},
		{"explicit empty scope", "t", 1, EnqueueOptions{Throttle: &Throttle{Key: "k", Scope: Ptr(""), Window: time.Second}}, "options.throttle.scope"},
		{"explicit executionTimeout 0", "t", 1, EnqueueOptions{ExecutionTimeout: Ptr(time.Duration(0))}, "options.executionTimeoutMs"},
		{"explicit empty concurrencyKey", "t", 1, EnqueueOptions{ConcurrencyKey: Ptr("")}, "options.concurrencyKey"},
		{"explicit empty source", "t", 1, EnqueueOptions{Source: Ptr("")}, "options.source"},
		{"explicit maxWait 0", "t", 1, EnqueueOptions{Debounce: &Debounce{Key: "k", Window: time.Second, MaxWait: Ptr(time.Duration(0))}}, "options.debounce.maxWaitMs"},
		{"explicit empty holdUntil", "t", 1, EnqueueOptions{Idempotency: &Idempotency{Key: "k", HoldUntil: Ptr(HoldUntil(""))}}, "options.idempotency.holdUntil"},
		{"zero deadline is year 1, in the past", "t", 1, EnqueueOptions{Deadline: Ptr(time.Time{})}, "options.deadline"},
		{"NaN", "t", map[string]any{"x": nan()}, EnqueueOptions{}, "payload"},
		{"channel", "t", ch, EnqueueOptions{}, "payload"},
		{"NUL in payload", "t", "a\x00b", EnqueueOptions{}, "payload"},
		{"invalid UTF-8", "t", "a\xffb", EnqueueOptions{}, "payload"},
		{"too deep", "t", deep, EnqueueOptions{}, "payload"},
		{"unsafe integer", "t", int64(1)<<60 + 1, EnqueueOptions{}, "payload"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := q.Enqueue(ctx, c.typ, c.payload, c.opts)
			var v *EnqueueValidationError
			if !errors.As(err, &v) {
				t.Fatalf("want a validation error, got %v", err)
			}
			if v.Option != c.option {
				t.Fatalf("option %q (rule %q), want %q", v.Option, v.Rule, c.option)
			}
		})
	}
	big := strings.Repeat("x", 1024*1024)
	if _, err := q.Enqueue(ctx, "t", big, EnqueueOptions{}); err == nil {
		t.Fatal("a payload over 1 MiB was accepted")
	}
	if _, err := q.EnqueueMany(ctx, make([]Request, 1001)); err == nil {
		t.Fatal("a batch of 1001 was accepted")
	}
	if after := countRows(t, pool, "select count(*)::int from workhorse.job"); after != before {
		t.Fatalf("bad input wrote %d jobs", after-before)
	}
}

// A RunAt of Go's zero time.Time is given: the job runs at 0001-01-01T00:00:00Z, as the same
// request from TypeScript or Python does, and a replay of it is a replay (no conflict on runAt).
func TestZeroRunAtIsAnInstant(t *testing.T) {
	q, _ := newTestQueue(t)
	ctx := context.Background()
	opts := EnqueueOptions{RunAt: Ptr(time.Time{}), Idempotency: &Idempotency{Key: unique("year-1")}}
	first, err := q.EnqueueWithResult(ctx, "t", map[string]any{"n": 1}, opts)
	if err != nil || first.Outcome != Accepted {
		t.Fatalf("first: %+v %v", first, err)
	}
	job, err := q.GetJob(ctx, first.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC); !job.RunAt.Equal(want) {
		t.Fatalf("run_at %v, want %v", job.RunAt, want)
	}
	again, err := q.EnqueueWithResult(ctx, "t", map[string]any{"n": 1}, opts)
	if err != nil || again.Outcome != Replayed || again.JobID != first.JobID {
		t.Fatalf("replay: %+v %v", again, err)
	}
	opts.RunAt = nil
	var conflict *EnqueueIdempotencyConflictError
	if _, err := q.Enqueue(ctx, "t", map[string]any{"n": 1}, opts); !errors.As(err, &conflict) {
		t.Fatalf("the same key without RunAt: want a conflict on runAt, got %v", err)
	}
	if !reflect.DeepEqual(conflict.ConflictingFields, []string{"runAt"}) {
		t.Fatalf("conflicting fields %v", conflict.ConflictingFields)
	}
}

// A bad configuration is NewQueue's error, as pgxpool.New's is, naming what is wrong; no Queue.
func TestConfigurationErrors(t *testing.T) {
	pool := newPool(t)
	cases := []struct {
		option string
		make   func() (*Queue, error)
	}{
		{"pool", func() (*Queue, error) { return NewQueue(nil) }},
		{"keySecret", func() (*Queue, error) { return NewQueue(pool, WithKeySecret([]byte("short"))) }},
		{"maxPayloadBytes", func() (*Queue, error) { return NewQueue(pool, WithMaxPayloadBytes(1)) }},
		{"retry", func() (*Queue, error) { return NewQueue(pool, WithRetry(0, time.Second)) }},
		{"source", func() (*Queue, error) { return NewQueue(pool, WithSource("a\nb")) }},
		{"WORKHORSE_KEY_SECRET", func() (*Queue, error) {
			t.Setenv("WORKHORSE_KEY_SECRET", "not-hex")
			return NewQueue(pool)
		}},
	}
	for _, c := range cases {
		q, err := c.make()
		var v *EnqueueValidationError
		if q != nil || !errors.As(err, &v) || v.Option != c.option {
			t.Fatalf("%s: got (%v, %v), want no Queue and a validation error naming it", c.option, q, err)
		}
	}
}

func TestOutsideSecretChangesTheHash(t *testing.T) {
	pool := newPool(t)
	secret := make([]byte, 32)
	secret[0] = 7
	q, err := NewQueue(pool, WithKeySecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	d, err := q.DescribeKey(context.Background(), "capture:INV-42", "invoice-capture")
	if err != nil {
		t.Fatal(err)
	}
	if want := KeyDigestOf(KeyHash(secret, "invoice-capture", "capture:INV-42")); d.KeyDigest != want {
		t.Fatalf("%s != %s", d.KeyDigest, want)
	}
}

func TestContextCancellationIsHonoured(t *testing.T) {
	q, _ := newTestQueue(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := q.Enqueue(ctx, "t", 1, EnqueueOptions{Idempotency: &Idempotency{Key: unique("c")}})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}
