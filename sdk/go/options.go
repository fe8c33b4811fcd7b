package workhorse

import "time"

// EnqueueOptions are a request's options. An optional option is a pointer: nil is "not given"
// (the default applies), and any value it points to is given and checked as the TypeScript and
// Python clients check it, so an explicit 0 or "" is refused where theirs is (MaxAttempts 0: "must
// be at least 1") and a RunAt of 0001-01-01T00:00:00Z is that instant. Ptr makes the pointer:
//
//	workhorse.EnqueueOptions{Queue: workhorse.Ptr("billing"), MaxAttempts: workhorse.Ptr(5)}
//
// Defaults: Queue "default", RunAt now, MaxAttempts 25, no Deadline, ExecutionTimeout,
// ConcurrencyKey or tags. At most one of Idempotency, Debounce and Throttle.
type EnqueueOptions struct {
	Queue            *string        // 1..128 characters, no control characters
	RunAt            *time.Time     // kept to the millisecond, years 1..9999 (UTC)
	MaxAttempts      *int           // 1..1000
	RetryPolicy      *RetryPolicy   // nil: exponential from 1 s doubling
	Deadline         *time.Time     // after RunAt (or now); kept to the millisecond
	ExecutionTimeout *time.Duration // whole milliseconds, 1 ms..365 days
	ConcurrencyKey   *string        // 1..256 characters
	Tags             []string       // at most 32, each 1..128 characters; nil and empty are no tags
	Idempotency      *Idempotency
	Debounce         *Debounce
	Throttle         *Throttle
	// Source labels this request's observations (replays, conflicts), 1..128 characters; nil: the
	// Queue's WithSource.
	Source *string
}

// Ptr returns a pointer to v, for EnqueueOptions' optional fields:
// Ptr("billing"), Ptr(5), Ptr(10*time.Minute), Ptr(runAt), Ptr(HoldUntilFinished).
func Ptr[T any](v T) *T { return &v }

// Idempotency binds a scoped key to the job for TTL (default 24 h): an equal request while the
// binding lives replays the job's id, a different one is an *EnqueueIdempotencyConflictError.
type Idempotency struct {
	Key   string         // 1..512 UTF-8 bytes; hashed, never stored
	Scope *string        // 1..256 UTF-8 bytes; nil is "default"
	TTL   *time.Duration // whole milliseconds, 1 ms..365 days; nil is 24 h (with HoldUntil: no time limit)
	// HoldUntil holds the key until its job finishes or starts (docs/enqueue.md, "Key lifetimes");
	// nil holds it for TTL only.
	HoldUntil *HoldUntil
}

// HoldUntil is a key's lifetime (docs/enqueue.md, "Key lifetimes"): the key is released in the
// transaction that ends its job (HoldUntilFinished: succeeded, dead-lettered, canceled, purged; a
// failed attempt that will be retried keeps it) or in the one in which a worker claims it
// (HoldUntilStarted). A lapsed lease releases nothing. Part of the fingerprint.
type HoldUntil string

const (
	HoldUntilFinished HoldUntil = "finished"
	HoldUntilStarted  HoldUntil = "started"
)

// Debounce coalesces repeats into one pending job that runs when Window closes (docs/debounce-throttle.md).
type Debounce struct {
	Key      string
	Scope    *string        // nil is "default"
	Window   time.Duration  // whole milliseconds, 1 ms..365 days
	Schedule *string        // "reset" (nil) or "preserve"
	MaxWait  *time.Duration // nil: no cap; otherwise at least Window
	// HoldUntil: held until the job starts or finishes, replaceable while it is pending (with
	// HoldUntilStarted: one running job plus one queued).
	HoldUntil *HoldUntil
}

// Throttle accepts the first request of each Window; equal repeats inside it are "coalesced".
type Throttle struct {
	Key    string
	Scope  *string // nil is "default"
	Window time.Duration
}

// RetryPolicy: Type "fixed" uses Delay; Type "exponential" uses InitialDelay, Multiplier (1..100)
// and MaxDelay. Delays are whole milliseconds, 0..365 days.
type RetryPolicy struct {
	Type         string
	Delay        time.Duration
	InitialDelay time.Duration
	Multiplier   int
	MaxDelay     time.Duration
}

// FixedRetry is a RetryPolicy that waits the same delay before every retry.
func FixedRetry(delay time.Duration) *RetryPolicy { return &RetryPolicy{Type: "fixed", Delay: delay} }

// ExponentialRetry is a RetryPolicy that multiplies the delay by multiplier, up to maxDelay.
func ExponentialRetry(initial time.Duration, multiplier int, maxDelay time.Duration) *RetryPolicy {
	return &RetryPolicy{Type: "exponential", InitialDelay: initial, Multiplier: multiplier, MaxDelay: maxDelay}
}

// Request is one request of a batch (EnqueueMany).
type Request struct {
	Type    string
	Payload any
	Options EnqueueOptions
}

// Outcome is what PostgreSQL decided for one request.
type Outcome string

const (
	Accepted       Outcome = "accepted"
	Replayed       Outcome = "replayed"
	Replaced       Outcome = "replaced"
	NonReplaceable Outcome = "non_replaceable"
	Coalesced      Outcome = "coalesced"
)

// EnqueueResult is one request's decision. JobID is always the job that holds (or now holds) the
// key. Reason is set only on NonReplaceable (incompatible_key_mode, not_pending,
// window_elapsed_pending). KeyPreview, KeyDigest and KeyLength are set on keyed requests only.
type EnqueueResult struct {
	JobID      string
	Outcome    Outcome
	Reason     string
	KeyPreview string
	KeyDigest  string
	KeyLength  int
}
