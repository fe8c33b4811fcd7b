package workhorse

import "time"

// EnqueueOptions are a request's options. Zero values mean "not given": Queue "" is "default",
// MaxAttempts 0 is 25, a zero RunAt/Deadline/ExecutionTimeout is absent, ConcurrencyKey "" is none.
// At most one of Idempotency, Debounce and Throttle.
type EnqueueOptions struct {
	Queue            string
	RunAt            time.Time
	MaxAttempts      int
	RetryPolicy      *RetryPolicy
	Deadline         time.Time
	ExecutionTimeout time.Duration
	ConcurrencyKey   string
	Tags             []string
	Idempotency      *Idempotency
	Debounce         *Debounce
	Throttle         *Throttle
	// Source labels this request's observations (replays, conflicts); default: the Queue's WithSource.
	Source string
}

// Idempotency binds a scoped key to the job for TTL (default 24 h): an equal request while the
// binding lives replays the job's id, a different one is an *EnqueueIdempotencyConflictError.
type Idempotency struct {
	Key   string
	Scope string        // "" is "default"
	TTL   time.Duration // 0 is 24 h (with HoldUntil: no time limit); whole milliseconds, at most 365 days
	// HoldUntil holds the key until its job finishes or starts (docs/enqueue.md, "Key lifetimes");
	// "" holds it for TTL only.
	HoldUntil HoldUntil
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
	Scope    string
	Window   time.Duration
	Schedule string        // "reset" (default) or "preserve"
	MaxWait  time.Duration // 0: no cap; otherwise at least Window
	// HoldUntil: held until the job starts or finishes, replaceable while it is pending (with
	// HoldUntilStarted: one running job plus one queued).
	HoldUntil HoldUntil
}

// Throttle accepts the first request of each Window; equal repeats inside it are "coalesced".
type Throttle struct {
	Key    string
	Scope  string
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
