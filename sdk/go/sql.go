package workhorse

import (
	"fmt"
	"strings"
	"time"
)

// The parameters of workhorse.enqueue_one, in order (the TypeScript core's FIELDS table in
// lib/store/core/enqueue.ts; the conformance file's enqueueOneParams pins them), then its tail:
// p_notify, p_schedule, p_max_wait_ms, p_retry (holdParamTypes adds the last two).
var oneParamTypes = []string{
	"uuid", "text", "text", "jsonb", "timestamptz", "integer", "jsonb", "timestamptz", "bigint", "text",
	"text[]", "text", "text", "bytea", "text", "integer", "bigint", "bytea",
	"boolean", "text", "bigint", "boolean",
}

const (
	fieldCount     = 18
	paramScope     = 13 // p_scope
	paramKeyHash   = 14 // p_key_hash
	resultColumns  = "job_id::text, outcome, request_digest, reason"
	layoutSQL      = "select to_regclass('workhorse.shard_bucket') is not null as distributed"
	installationQ  = "select %s as key_secret, coalesce(greatest(0, extract(epoch from legacy_key_hashes_until - now()) * 1000), 0)::float8 as legacy_ms from workhorse.installation"
	bindingColumns = `b.scope, b.key_hash, b.job_id::text, b.mode, b.key_preview, b.key_length,
  encode(b.request_digest, 'hex') as request_digest, coalesce(b.ttl_ms, 0),
  b.created_at, nullif(b.expires_at, 'infinity'), b.expires_at <= now() as expired, b.schedule, b.max_wait_ms,
  coalesce(b.hold_until, '')`
)

func placeholders(types []string) string {
	return placeholdersFrom(types, 1)
}

func oneCall(count int) string {
	return "select 1 as ordinal, " + resultColumns + " from workhorse.enqueue_one(" + placeholders(oneParamTypes[:count]) + ")"
}

// withLegacyProbe: while pre-HMAC bindings can be live, the key-hash argument becomes "the live
// legacy binding's hash if there is one, else the key hash" (the legacy hash is one more parameter).
func withLegacyProbe(sql string, legacyParam int) string {
	keyHash := fmt.Sprintf("$%d::bytea", paramKeyHash)
	return strings.Replace(sql, keyHash, fmt.Sprintf(`coalesce((select b.key_hash from workhorse.key_binding b
        where b.scope = $%d::text and b.key_hash = $%d::bytea and b.expires_at > now() for key share), %s)`,
		paramScope, legacyParam, keyHash), 1)
}

var (
	enqueueOneSQL            = oneCall(fieldCount + 1)
	enqueueDebounceSQL       = oneCall(fieldCount + 3)
	enqueueRetrySQL          = oneCall(fieldCount + 4)
	enqueueOneLegacySQL      = withLegacyProbe(enqueueOneSQL, fieldCount+2)
	enqueueDebounceLegacySQL = withLegacyProbe(enqueueDebounceSQL, fieldCount+4)
	enqueueRetryLegacySQL    = withLegacyProbe(enqueueRetrySQL, fieldCount+5)
	// A request with a key lifetime: every parameter, then p_trace_context (null) and p_hold_until.
	enqueueHoldSQL       = "select 1 as ordinal, " + resultColumns + " from workhorse.enqueue_one(" + placeholders(holdParamTypes) + ")"
	enqueueHoldLegacySQL = withLegacyProbe(enqueueHoldSQL, len(holdParamTypes)+1)
	enqueueBatchSQL      = "select ordinal, " + resultColumns + " from workhorse.enqueue_batch(" + placeholders([]string{
		"uuid[]", "text[]", "text[]", "jsonb", "timestamptz[]", "integer[]", "jsonb[]", "timestamptz[]", "bigint[]",
		"text[]", "text[]", "integer[]", "text[]", "text[]", "bytea[]", "text[]", "integer[]", "bigint[]", "bytea[]",
		"bytea[]", "boolean", "text[]", "bigint[]", "boolean", "text", "text[]",
	}) + ")"
)

// holdParamTypes: enqueue_one's (and enqueue_one_at's) parameters through p_trace_context and
// p_hold_until, the last two.
var holdParamTypes = append(append([]string{}, oneParamTypes...), "text", "text")

// enqueueOneAtSQL is the distributed layout's call for one request: the same decision, delegated to
// the node holding the request's bucket ($1, also in the job id); the literal 1 is the ordinal.
var enqueueOneAtSQL = "select 1 as ordinal, " + resultColumns + " from workhorse.enqueue_one_at($1::integer, 1, " +
	placeholdersFrom(holdParamTypes, 2) + ")"

// oneAtValues are enqueue_one_at's parameters: the bucket, every enqueue_one parameter (the tail in full).
func oneAtValues(r *normalizedRequest, id string, notify, retry bool) []any {
	var schedule, maxWait any
	if k := r.Keyed; k != nil && k.Mode == "debounce" {
		schedule, maxWait = strPtr(k.Schedule), int64Ptr(k.MaxWaitMs)
	}
	values := append([]any{idBucket(id)}, fieldValues(r, id)...)
	return append(values, notify, schedule, maxWait, retry, nil, holdParam(r))
}

func placeholdersFrom(types []string, from int) string {
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("$%d::%s", i+from, t)
	}
	return strings.Join(parts, ", ")
}

func timeParam(t *time.Time) any {
	if t == nil {
		return nil
	}
	return *t
}

func strPtr(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// holdParam is p_hold_until: the request's key lifetime, or null.
func holdParam(r *normalizedRequest) any {
	if r.Keyed == nil || r.Keyed.HoldUntil == "" {
		return nil
	}
	return r.Keyed.HoldUntil
}

// ttlParam is p_ttl_ms: null for a key lifetime without a TTL.
func ttlParam(k *keyedRequest) any {
	if k.TTLMs == 0 {
		return nil
	}
	return k.TTLMs
}

func int64Ptr(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}

// fieldValues are the 18 field parameters of enqueue_one for this request. p_field_digests is null:
// PostgreSQL digests the values it receives (workhorse.request_field_digests).
func fieldValues(r *normalizedRequest, id string) []any {
	var retry any
	if r.RetryPolicy != nil {
		retry = r.RetryPolicy.json()
	}
	v := []any{id, r.Queue, r.Type, r.PayloadJSON, timeParam(r.RunAt), r.MaxAttempts, retry, timeParam(r.Deadline),
		int64Ptr(r.ExecutionTimeoutMs), strPtr(r.ConcurrencyKey), r.Tags}
	if k := r.Keyed; k != nil {
		v = append(v, k.Mode, k.Key.Scope, k.Key.KeyHash, k.Key.KeyPreview, k.Key.KeyLength, ttlParam(k), nil)
	} else {
		v = append(v, nil, nil, nil, nil, nil, nil, nil)
	}
	return v
}

// oneStatement is the statement and its parameters for one request; retry from a call's second try on.
func oneStatement(r *normalizedRequest, id string, notify, retry bool) (string, []any) {
	k := r.Keyed
	legacy := k != nil && k.Key.LegacyKeyHash != nil
	values := append(fieldValues(r, id), notify)
	var sql string
	switch {
	case k != nil && k.HoldUntil != "":
		var schedule, maxWait any
		if k.Mode == "debounce" {
			schedule, maxWait = strPtr(k.Schedule), int64Ptr(k.MaxWaitMs)
		}
		values = append(values, schedule, maxWait, retry, nil, k.HoldUntil)
		sql = enqueueHoldSQL
		if legacy {
			sql = enqueueHoldLegacySQL
		}
	case retry:
		var schedule, maxWait any
		if k != nil && k.Mode == "debounce" {
			schedule, maxWait = strPtr(k.Schedule), int64Ptr(k.MaxWaitMs)
		}
		values = append(values, schedule, maxWait, true)
		sql = enqueueRetrySQL
		if legacy {
			sql = enqueueRetryLegacySQL
		}
	case k != nil && k.Mode == "debounce":
		values = append(values, strPtr(k.Schedule), int64Ptr(k.MaxWaitMs))
		sql = enqueueDebounceSQL
		if legacy {
			sql = enqueueDebounceLegacySQL
		}
	default:
		sql = enqueueOneSQL
		if legacy {
			sql = enqueueOneLegacySQL
		}
	}
	if legacy {
		values = append(values, k.Key.LegacyKeyHash)
	}
	return sql, values
}

// batchValues are enqueue_batch's parameters: one array per field, in input order.
func batchValues(rs []*normalizedRequest, ids []string, notify, retry bool) []any {
	n := len(rs)
	queues, types := make([]string, n), make([]string, n)
	runAts, deadlines := make([]*time.Time, n), make([]*time.Time, n)
	maxAttempts, tagCounts, keyLengths := make([]int32, n), make([]int32, n), make([]*int32, n)
	retries, concurrency := make([][]byte, n), make([]*string, n)
	timeouts, ttls, maxWaits := make([]*int64, n), make([]*int64, n), make([]*int64, n)
	modes, scopes, previews, schedules := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	hashes, legacy := make([][]byte, n), make([][]byte, n)
	// p_field_digests: one null per request; PostgreSQL digests the values it receives.
	digests := make([][]byte, n)
	var tags []string
	var payloads strings.Builder
	payloads.WriteByte('[')
	anyLegacy, anyDebounce, anyHold := false, false, false
	holds := make([]*string, n)
	for i, r := range rs {
		if i > 0 {
			payloads.WriteByte(',')
		}
		payloads.WriteString(r.PayloadJSON)
		queues[i], types[i], runAts[i], deadlines[i] = r.Queue, r.Type, r.RunAt, r.Deadline
		maxAttempts[i] = int32(r.MaxAttempts)
		if r.RetryPolicy != nil {
			retries[i] = []byte(r.RetryPolicy.json())
		}
		timeouts[i], concurrency[i] = r.ExecutionTimeoutMs, r.ConcurrencyKey
		tags = append(tags, r.Tags...)
		tagCounts[i] = int32(len(r.Tags))
		if k := r.Keyed; k != nil {
			mode, scope, preview := k.Mode, k.Key.Scope, k.Key.KeyPreview
			length, ttl := int32(k.Key.KeyLength), k.TTLMs
			modes[i], scopes[i], previews[i], keyLengths[i] = &mode, &scope, &preview, &length
			if ttl != 0 {
				ttls[i] = &ttl
			}
			if k.HoldUntil != "" {
				h := k.HoldUntil
				holds[i], anyHold = &h, true
			}
			hashes[i], legacy[i] = k.Key.KeyHash, k.Key.LegacyKeyHash
			if k.Key.LegacyKeyHash != nil {
				anyLegacy = true
			}
			if k.Mode == "debounce" {
				anyDebounce = true
				schedules[i], maxWaits[i] = k.Schedule, k.MaxWaitMs
			}
		}
	}
	payloads.WriteByte(']')
	if tags == nil {
		tags = []string{}
	}
	values := []any{ids, queues, types, payloads.String(), runAts, maxAttempts, retries, deadlines, timeouts,
		concurrency, tags, tagCounts, modes, scopes, hashes, previews, keyLengths, ttls, digests}
	if anyLegacy {
		values = append(values, legacy)
	} else {
		values = append(values, nil)
	}
	values = append(values, notify)
	if anyDebounce {
		values = append(values, schedules, maxWaits)
	} else {
		values = append(values, nil, nil)
	}
	values = append(values, retry, nil)
	if anyHold {
		return append(values, holds)
	}
	return append(values, nil)
}
