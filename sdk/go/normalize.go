package workhorse

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds and defaults, as the TypeScript core's LIMITS.
const (
	keyBytes             = 512
	scopeBytes           = 256
	maxWindowMs          = 31_536_000_000
	defaultTTLMs         = 86_400_000
	nameChars            = 128
	maxTags              = 32
	tagChars             = 128
	maxAttemptsLimit     = 1000
	defaultMaxAttempts   = 25
	defaultPayloadBytes  = 1024 * 1024
	maxBatch             = 1000
	maxBatchPayloadBytes = 64 * 1024 * 1024
	concurrencyKeyChars  = 256
	sourceChars          = 128
	defaultQueue         = "default"
	defaultScope         = "default"
)

var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)
)

// normalizedRetryPolicy is the one stored shape of a retry policy (sent in this key order, the
// order PostgreSQL's fingerprint digest of it writes).
type normalizedRetryPolicy struct {
	InitialDelayMs int64
	Multiplier     int
	MaxDelayMs     int64
}

func (p *normalizedRetryPolicy) json() string {
	if p == nil {
		return "null"
	}
	return fmt.Sprintf(`{"initialDelayMs":%d,"multiplier":%d,"maxDelayMs":%d}`, p.InitialDelayMs, p.Multiplier, p.MaxDelayMs)
}

// normalizedRequest is the canonical request the database sees.
type normalizedRequest struct {
	Type               string
	Queue              string
	PayloadJSON        string
	payloadBytes       int
	RunAt              *time.Time // millisecond precision, UTC; nil when not given
	MaxAttempts        int
	RetryPolicy        *normalizedRetryPolicy
	Deadline           *time.Time
	ExecutionTimeoutMs *int64
	ConcurrencyKey     *string
	Tags               []string
	Source             string
	Keyed              *keyedRequest
}

type keyedRequest struct {
	Mode  string
	Scope string
	key   string // hashed once the installation secret is known; never sent or shown
	Key   KeyIdentity
	TTLMs int64
	// Debounce only.
	Schedule  *string
	MaxWaitMs *int64
	// The key's lifetime ("finished", "started"), or "". With one, TTLMs 0 means no time limit
	// (sent as null).
	HoldUntil string
}

type issues []ValidationIssue

// checkHoldUntil is a key lifetime checked: nil (none, ""), "finished" or "started".
func checkHoldUntil(is *issues, option string, h *HoldUntil) string {
	if h == nil {
		return ""
	}
	if *h != HoldUntilFinished && *h != HoldUntilStarted {
		is.add(option, `must be "finished" or "started"`)
	}
	return string(*h)
}

func (is *issues) add(option, rule string) {
	*is = append(*is, ValidationIssue{Option: option, Rule: rule})
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Cc, r) {
			return true
		}
	}
	return false
}

// storable: PostgreSQL text holds it (valid UTF-8, no NUL).
func storable(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

func checkName(is *issues, option, s string) {
	if c := utf8Chars(s); c < 1 || c > nameChars {
		is.add(option, fmt.Sprintf("must be 1..%d characters", nameChars))
	}
	if hasControl(s) {
		is.add(option, "must not contain control characters")
	}
	if !utf8.ValidString(s) {
		is.add(option, "must be well-formed Unicode (no lone surrogates)")
	}
}

func checkKey(is *issues, option, key string) {
	if len(key) == 0 || len(key) > keyBytes {
		is.add(option, fmt.Sprintf("must be 1..%d UTF-8 bytes", keyBytes))
	}
	if !utf8.ValidString(key) {
		is.add(option, "must be well-formed Unicode (no lone surrogates)")
	}
}

// checkScope: nil means the default scope.
func checkScope(is *issues, option string, given *string) string {
	if given == nil {
		return defaultScope
	}
	scope := *given
	if len(scope) == 0 || len(scope) > scopeBytes {
		is.add(option, fmt.Sprintf("must be 1..%d UTF-8 bytes", scopeBytes))
	}
	if !storable(scope) {
		is.add(option, storableRule)
	}
	return scope
}

const storableRule = "must be well-formed Unicode without NUL characters"

// windowMillis checks a TTL, window or timeout: whole milliseconds, 1..365 days.
func windowMillis(is *issues, option string, d time.Duration) int64 {
	if d%time.Millisecond != 0 {
		is.add(option, fmt.Sprintf("must be an integer number of milliseconds, 1..%d", int64(maxWindowMs)))
		return 0
	}
	ms := d.Milliseconds()
	if ms < 1 {
		is.add(option, "must be at least 1 ms")
	} else if ms > maxWindowMs {
		is.add(option, fmt.Sprintf("must be at most %d ms (365 days)", int64(maxWindowMs)))
	}
	return ms
}

// delayMillis checks a retry delay: whole milliseconds, 0..365 days.
func delayMillis(is *issues, option string, d time.Duration) int64 {
	if d%time.Millisecond != 0 {
		is.add(option, "must be an integer number of milliseconds")
		return 0
	}
	ms := d.Milliseconds()
	if ms < 0 {
		is.add(option, "must be at least 0 ms")
	} else if ms > maxWindowMs {
		is.add(option, fmt.Sprintf("must be at most %d ms (365 days)", int64(maxWindowMs)))
	}
	return ms
}

func checkDate(is *issues, option string, t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Millisecond)
	if u.Before(minTime) || u.After(maxTime) {
		is.add(option, "must be between the years 1 and 9999 (UTC)")
		return nil
	}
	return &u
}

// normalize checks one request against the input rules, in the TypeScript core's order (type, the
// options field by field, then the rules that relate options, then the payload), and returns its
// canonical form. `base` prefixes option paths (requests[i]) in batches. The key is hashed later,
// once the installation secret is loaded.
func normalize(typ string, payload any, o EnqueueOptions, maxPayload int, defaultSource string, base string, now time.Time) (*normalizedRequest, error) {
	var is issues
	at := func(s string) string {
		if base == "" {
			return s
		}
		return base + "." + s
	}
	checkName(&is, at("type"), typ)
	var optionIssues issues
	n := &normalizedRequest{Type: typ, Queue: defaultQueue, MaxAttempts: defaultMaxAttempts, Tags: []string{}, Source: defaultSource}
	if o.Queue != nil {
		checkName(&optionIssues, at("options.queue"), *o.Queue)
		n.Queue = *o.Queue
	}
	n.RunAt = checkDate(&optionIssues, at("options.runAt"), o.RunAt)
	if o.MaxAttempts != nil {
		if m := *o.MaxAttempts; m < 1 {
			optionIssues.add(at("options.maxAttempts"), "must be at least 1")
		} else if m > maxAttemptsLimit {
			optionIssues.add(at("options.maxAttempts"), fmt.Sprintf("must be at most %d", maxAttemptsLimit))
		}
		n.MaxAttempts = *o.MaxAttempts
	}
	if p := o.RetryPolicy; p != nil {
		opt := at("options.retryPolicy")
		switch p.Type {
		case "fixed":
			d := delayMillis(&optionIssues, opt+".delayMs", p.Delay)
			n.RetryPolicy = &normalizedRetryPolicy{InitialDelayMs: d, Multiplier: 1, MaxDelayMs: d}
		case "exponential":
			i := delayMillis(&optionIssues, opt+".initialDelayMs", p.InitialDelay)
			if p.Multiplier < 1 {
				optionIssues.add(opt+".multiplier", "must be at least 1")
			} else if p.Multiplier > 100 {
				optionIssues.add(opt+".multiplier", "must be at most 100")
			}
			m := delayMillis(&optionIssues, opt+".maxDelayMs", p.MaxDelay)
			n.RetryPolicy = &normalizedRetryPolicy{InitialDelayMs: i, Multiplier: p.Multiplier, MaxDelayMs: m}
		default:
			optionIssues.add(opt+".type", `must be {type:"fixed", delayMs} or {type:"exponential", initialDelayMs, multiplier, maxDelayMs}`)
		}
	}
	n.Deadline = checkDate(&optionIssues, at("options.deadline"), o.Deadline)
	if o.ExecutionTimeout != nil {
		ms := windowMillis(&optionIssues, at("options.executionTimeoutMs"), *o.ExecutionTimeout)
		n.ExecutionTimeoutMs = &ms
	}
	if o.ConcurrencyKey != nil {
		ck := *o.ConcurrencyKey
		if c := utf8Chars(ck); c < 1 || c > concurrencyKeyChars {
			optionIssues.add(at("options.concurrencyKey"), fmt.Sprintf("must be 1..%d characters", concurrencyKeyChars))
		}
		if !storable(ck) {
			optionIssues.add(at("options.concurrencyKey"), storableRule)
		}
		n.ConcurrencyKey = &ck
	}
	if o.Tags != nil {
		seen := map[string]bool{}
		for i, t := range o.Tags {
			opt := fmt.Sprintf("%s[%d]", at("options.tags"), i)
			if c := utf8Chars(t); c < 1 || c > tagChars {
				optionIssues.add(opt, fmt.Sprintf("each tag must be 1..%d characters", tagChars))
			}
			if !storable(t) {
				optionIssues.add(opt, storableRule)
			}
			if !seen[t] {
				seen[t] = true
				n.Tags = append(n.Tags, t)
			}
		}
		if len(o.Tags) > maxTags {
			optionIssues.add(at("options.tags"), fmt.Sprintf("at most %d tags", maxTags))
		}
		sort.Strings(n.Tags) // bytewise, as the TypeScript core sorts UTF-8 bytes
	}

	// The keyed modes, each checked field by field.
	var idem, deb, thr *keyedRequest
	if x := o.Idempotency; x != nil {
		opt := at("options.idempotency")
		checkKey(&optionIssues, opt+".key", x.Key)
		idem = &keyedRequest{Mode: "idempotency", key: x.Key, Scope: checkScope(&optionIssues, opt+".scope", x.Scope), TTLMs: defaultTTLMs}
		if x.HoldUntil != nil {
			idem.TTLMs = 0
		}
		if x.TTL != nil {
			idem.TTLMs = windowMillis(&optionIssues, opt+".ttlMs", *x.TTL)
		}
		idem.HoldUntil = checkHoldUntil(&optionIssues, opt+".holdUntil", x.HoldUntil)
	}
	if x := o.Debounce; x != nil {
		opt := at("options.debounce")
		checkKey(&optionIssues, opt+".key", x.Key)
		deb = &keyedRequest{Mode: "debounce", key: x.Key, Scope: checkScope(&optionIssues, opt+".scope", x.Scope)}
		deb.TTLMs = windowMillis(&optionIssues, opt+".windowMs", x.Window)
		schedule := "reset"
		if x.Schedule != nil {
			schedule = *x.Schedule
			if schedule != "reset" && schedule != "preserve" {
				optionIssues.add(opt+".schedule", `must be "reset" or "preserve"`)
			}
		}
		deb.Schedule = &schedule
		if x.MaxWait != nil {
			mw := windowMillis(&optionIssues, opt+".maxWaitMs", *x.MaxWait)
			deb.MaxWaitMs = &mw
		}
		deb.HoldUntil = checkHoldUntil(&optionIssues, opt+".holdUntil", x.HoldUntil)
	}
	if x := o.Throttle; x != nil {
		opt := at("options.throttle")
		checkKey(&optionIssues, opt+".key", x.Key)
		thr = &keyedRequest{Mode: "throttle", key: x.Key, Scope: checkScope(&optionIssues, opt+".scope", x.Scope)}
		thr.TTLMs = windowMillis(&optionIssues, opt+".windowMs", x.Window)
	}
	if o.Source != nil {
		src := *o.Source
		if c := utf8Chars(src); c < 1 || c > sourceChars {
			optionIssues.add(at("options.source"), fmt.Sprintf("must be 1..%d characters", sourceChars))
		}
		if !utf8.ValidString(src) || hasControl(src) {
			optionIssues.add(at("options.source"), "must be well-formed Unicode without control characters")
		}
		n.Source = src
	}

	// The rules that relate options, checked once every option is valid on its own.
	if len(optionIssues) == 0 {
		var modes []string
		for _, m := range []struct {
			name string
			k    *keyedRequest
		}{{"idempotency", idem}, {"debounce", deb}, {"throttle", thr}} {
			if m.k != nil {
				modes = append(modes, m.name)
			}
		}
		if len(modes) > 1 {
			optionIssues.add(at("options."+modes[1]), "cannot be combined with "+modes[0]+": use one keyed mode per request")
		}
		if n.Deadline != nil {
			ref := now
			if n.RunAt != nil {
				ref = *n.RunAt
			}
			if !n.Deadline.After(ref) {
				if n.RunAt != nil {
					optionIssues.add(at("options.deadline"), "must be after runAt")
				} else {
					optionIssues.add(at("options.deadline"), "must be in the future (after runAt, which defaults to now)")
				}
			}
		}
		if p := n.RetryPolicy; p != nil && o.RetryPolicy.Type == "exponential" && p.MaxDelayMs < p.InitialDelayMs {
			optionIssues.add(at("options.retryPolicy.maxDelayMs"), "must be at least initialDelayMs")
		}
		if deb != nil && n.RunAt != nil {
			optionIssues.add(at("options.runAt"), "cannot be combined with debounce: a debounced job runs when its window closes (use windowMs)")
		}
		if deb != nil && deb.MaxWaitMs != nil && *deb.MaxWaitMs < deb.TTLMs {
			optionIssues.add(at("options.debounce.maxWaitMs"), fmt.Sprintf("must be at least windowMs (%d)", deb.TTLMs))
		}
	}
	is = append(is, optionIssues...)
	cp, err := encodePayload(payload, maxPayload, at("payload"))
	if err != nil {
		is = append(is, err.(*EnqueueValidationError).Issues...)
	}
	if len(is) > 0 {
		return nil, newValidationError(is...)
	}
	n.PayloadJSON, n.payloadBytes = cp.Text, cp.StoredBytes
	k := idem
	if k == nil {
		k = deb
	}
	if k == nil {
		k = thr
	}
	if k != nil {
		// A keyed request sends PostgreSQL's own text of the payload. PostgreSQL digests the values
		// it receives for the request's fingerprint (workhorse.request_field_digests); the client
		// sends no digest of its own.
		n.PayloadJSON = cp.JSONBText
		n.Keyed = k
	}
	return n, nil
}
