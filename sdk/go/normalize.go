package workhorse

import (
	"bytes"
	"crypto/sha256"
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

// normalizedRetryPolicy is the one stored shape of a retry policy (key order is part of its digest).
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
	// 80 bytes: the 8-byte digests of every fingerprint field but the payload, in
	// workhorse.fingerprint_fields() order.
	FieldDigests []byte
}

type issues []ValidationIssue

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
	switch {
	case !utf8.ValidString(s):
		is.add(option, "must be well-formed Unicode (valid UTF-8)")
	case utf8Chars(s) < 1 || utf8Chars(s) > nameChars:
		is.add(option, fmt.Sprintf("must be 1..%d characters", nameChars))
	case hasControl(s):
		is.add(option, "must not contain control characters")
	}
}

func checkKey(is *issues, option, key string) {
	switch {
	case len(key) == 0 || len(key) > keyBytes:
		is.add(option, fmt.Sprintf("must be 1..%d UTF-8 bytes", keyBytes))
	case !utf8.ValidString(key):
		is.add(option, "must be well-formed Unicode (valid UTF-8)")
	}
}

func checkScope(is *issues, option, scope string) string {
	if scope == "" {
		return defaultScope
	}
	switch {
	case len(scope) > scopeBytes:
		is.add(option, fmt.Sprintf("must be 1..%d UTF-8 bytes", scopeBytes))
	case !storable(scope):
		is.add(option, "must be well-formed Unicode without NUL characters")
	}
	return scope
}

// millis checks a duration that must be whole milliseconds in [min, maxWindowMs].
func millis(is *issues, option string, d time.Duration, min int64) int64 {
	if d%time.Millisecond != 0 {
		is.add(option, "must be a whole number of milliseconds")
		return 0
	}
	ms := d.Milliseconds()
	if ms < min {
		is.add(option, fmt.Sprintf("must be at least %d ms", min))
	} else if ms > maxWindowMs {
		is.add(option, fmt.Sprintf("must be at most %d ms (365 days)", int64(maxWindowMs)))
	}
	return ms
}

func checkDate(is *issues, option string, t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC().Truncate(time.Millisecond)
	if u.Before(minTime) || u.After(maxTime) {
		is.add(option, "must be between the years 1 and 9999 (UTC)")
		return nil
	}
	return &u
}

func isoMillis(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// normalize checks one request against the input rules and returns its canonical form. `base`
// prefixes option paths (requests[i]) in batches. The key is not hashed here (keys are hashed once
// the installation secret is loaded).
func normalize(typ string, payload any, o EnqueueOptions, maxPayload int, defaultSource string, base string, now time.Time) (*normalizedRequest, error) {
	var is issues
	at := func(s string) string {
		if base == "" {
			return s
		}
		return base + "." + s
	}
	checkName(&is, at("type"), typ)
	n := &normalizedRequest{Type: typ, Queue: defaultQueue, MaxAttempts: defaultMaxAttempts, Tags: []string{}, Source: defaultSource}
	if o.Queue != "" {
		checkName(&is, at("options.queue"), o.Queue)
		n.Queue = o.Queue
	}
	n.RunAt = checkDate(&is, at("options.runAt"), o.RunAt)
	if o.MaxAttempts != 0 {
		if o.MaxAttempts < 1 {
			is.add(at("options.maxAttempts"), "must be at least 1")
		} else if o.MaxAttempts > maxAttemptsLimit {
			is.add(at("options.maxAttempts"), fmt.Sprintf("must be at most %d", maxAttemptsLimit))
		}
		n.MaxAttempts = o.MaxAttempts
	}
	if p := o.RetryPolicy; p != nil {
		opt := at("options.retryPolicy")
		switch p.Type {
		case "fixed":
			d := millis(&is, opt+".delayMs", p.Delay, 0)
			n.RetryPolicy = &normalizedRetryPolicy{InitialDelayMs: d, Multiplier: 1, MaxDelayMs: d}
		case "exponential":
			i := millis(&is, opt+".initialDelayMs", p.InitialDelay, 0)
			if p.Multiplier < 1 {
				is.add(opt+".multiplier", "must be at least 1")
			} else if p.Multiplier > 100 {
				is.add(opt+".multiplier", "must be at most 100")
			}
			m := millis(&is, opt+".maxDelayMs", p.MaxDelay, 0)
			if m < i {
				is.add(opt+".maxDelayMs", "must be at least initialDelayMs")
			}
			n.RetryPolicy = &normalizedRetryPolicy{InitialDelayMs: i, Multiplier: p.Multiplier, MaxDelayMs: m}
		default:
			is.add(opt, `must be {type:"fixed", delayMs} or {type:"exponential", initialDelayMs, multiplier, maxDelayMs}`)
		}
	}
	n.Deadline = checkDate(&is, at("options.deadline"), o.Deadline)
	if o.ExecutionTimeout != 0 {
		ms := millis(&is, at("options.executionTimeoutMs"), o.ExecutionTimeout, 1)
		n.ExecutionTimeoutMs = &ms
	}
	if o.ConcurrencyKey != "" {
		if !storable(o.ConcurrencyKey) {
			is.add(at("options.concurrencyKey"), "must be well-formed Unicode without NUL characters")
		} else if utf8Chars(o.ConcurrencyKey) > concurrencyKeyChars {
			is.add(at("options.concurrencyKey"), fmt.Sprintf("must be 1..%d characters", concurrencyKeyChars))
		}
		ck := o.ConcurrencyKey
		n.ConcurrencyKey = &ck
	}
	if o.Tags != nil {
		if len(o.Tags) > maxTags {
			is.add(at("options.tags"), fmt.Sprintf("at most %d tags", maxTags))
		}
		seen := map[string]bool{}
		for i, t := range o.Tags {
			opt := fmt.Sprintf("%s[%d]", at("options.tags"), i)
			if !storable(t) {
				is.add(opt, "must be well-formed Unicode without NUL characters")
			} else if c := utf8Chars(t); c < 1 || c > tagChars {
				is.add(opt, fmt.Sprintf("each tag must be 1..%d characters", tagChars))
			}
			if !seen[t] {
				seen[t] = true
				n.Tags = append(n.Tags, t)
			}
		}
		sort.Strings(n.Tags) // bytewise, as the TypeScript core sorts UTF-8 bytes
	}
	if o.Source != "" {
		if !utf8.ValidString(o.Source) || hasControl(o.Source) {
			is.add(at("options.source"), "must be well-formed Unicode without control characters")
		} else if utf8Chars(o.Source) > sourceChars {
			is.add(at("options.source"), fmt.Sprintf("must be 1..%d characters", sourceChars))
		}
		n.Source = o.Source
	}

	// The keyed mode.
	var modes []string
	if o.Idempotency != nil {
		modes = append(modes, "idempotency")
	}
	if o.Debounce != nil {
		modes = append(modes, "debounce")
	}
	if o.Throttle != nil {
		modes = append(modes, "throttle")
	}
	if len(modes) > 1 {
		is.add(at("options."+modes[1]), "cannot be combined with "+modes[0]+": use one keyed mode per request")
	}
	var k *keyedRequest
	switch {
	case o.Idempotency != nil:
		opt := at("options.idempotency")
		checkKey(&is, opt+".key", o.Idempotency.Key)
		k = &keyedRequest{Mode: "idempotency", key: o.Idempotency.Key, Scope: checkScope(&is, opt+".scope", o.Idempotency.Scope), TTLMs: defaultTTLMs}
		if o.Idempotency.TTL != 0 {
			k.TTLMs = millis(&is, opt+".ttlMs", o.Idempotency.TTL, 1)
		}
	case o.Debounce != nil:
		d := o.Debounce
		opt := at("options.debounce")
		checkKey(&is, opt+".key", d.Key)
		k = &keyedRequest{Mode: "debounce", key: d.Key, Scope: checkScope(&is, opt+".scope", d.Scope)}
		k.TTLMs = millis(&is, opt+".windowMs", d.Window, 1)
		schedule := d.Schedule
		if schedule == "" {
			schedule = "reset"
		} else if schedule != "reset" && schedule != "preserve" {
			is.add(opt+".schedule", `must be "reset" or "preserve"`)
		}
		k.Schedule = &schedule
		if d.MaxWait != 0 {
			mw := millis(&is, opt+".maxWaitMs", d.MaxWait, 1)
			if mw < k.TTLMs {
				is.add(opt+".maxWaitMs", fmt.Sprintf("must be at least windowMs (%d)", k.TTLMs))
			}
			k.MaxWaitMs = &mw
		}
		if n.RunAt != nil {
			is.add(at("options.runAt"), "cannot be combined with debounce: a debounced job runs when its window closes (use windowMs)")
		}
	case o.Throttle != nil:
		opt := at("options.throttle")
		checkKey(&is, opt+".key", o.Throttle.Key)
		k = &keyedRequest{Mode: "throttle", key: o.Throttle.Key, Scope: checkScope(&is, opt+".scope", o.Throttle.Scope)}
		k.TTLMs = millis(&is, opt+".windowMs", o.Throttle.Window, 1)
	}
	if n.Deadline != nil {
		ref := now
		if n.RunAt != nil {
			ref = *n.RunAt
		}
		if !n.Deadline.After(ref) {
			if n.RunAt != nil {
				is.add(at("options.deadline"), "must be after runAt")
			} else {
				is.add(at("options.deadline"), "must be in the future (after runAt, which defaults to now)")
			}
		}
	}
	payloadOption := at("payload")
	cp, err := encodePayload(payload, maxPayload, payloadOption)
	if err != nil {
		is = append(is, err.(*EnqueueValidationError).Issues...)
	}
	if len(is) > 0 {
		return nil, newValidationError(is...)
	}
	n.PayloadJSON, n.payloadBytes = cp.Text, cp.StoredBytes
	if k != nil {
		k.FieldDigests = fieldDigests(n, k.TTLMs)
		n.Keyed = k
	}
	return n, nil
}

// fingerprintJSON is each fingerprint field but the payload as JSON text (JavaScript's
// JSON.stringify of the value), in workhorse.fingerprint_fields() order.
func fingerprintJSON(n *normalizedRequest, ttlMs int64) [10]string {
	str := func(s string) string {
		var b strings.Builder
		jsString(&b, s)
		return b.String()
	}
	var f [10]string
	f[0] = "null"
	if n.ConcurrencyKey != nil {
		f[0] = str(*n.ConcurrencyKey)
	}
	f[1] = "null"
	if n.Deadline != nil {
		f[1] = str(isoMillis(*n.Deadline))
	}
	f[2] = "null"
	if n.ExecutionTimeoutMs != nil {
		f[2] = fmt.Sprint(*n.ExecutionTimeoutMs)
	}
	f[3] = fmt.Sprint(n.MaxAttempts)
	f[4] = str(n.Queue)
	f[5] = n.RetryPolicy.json()
	f[6] = `{"omitted":true}` // an omitted runAt stays omitted
	if n.RunAt != nil {
		f[6] = str(isoMillis(*n.RunAt))
	}
	var tags bytes.Buffer
	tags.WriteByte('[')
	for i, t := range n.Tags {
		if i > 0 {
			tags.WriteByte(',')
		}
		tags.WriteString(str(t))
	}
	tags.WriteByte(']')
	f[7] = tags.String()
	f[8] = fmt.Sprint(ttlMs)
	f[9] = str(n.Type)
	return f
}

// fieldDigests: 80 bytes, the first 8 bytes of SHA-256 of each fingerprintJSON field.
func fieldDigests(n *normalizedRequest, ttlMs int64) []byte {
	out := make([]byte, 0, 80)
	for _, text := range fingerprintJSON(n, ttlMs) {
		d := sha256.Sum256([]byte(text))
		out = append(out, d[:8]...)
	}
	return out
}
