package workhorse

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"time"

	"github.com/jackc/pgx/v4"
)

// Job is a job as stored (states: scheduled, ready, active, succeeded, failed, canceled, purged).
type Job struct {
	ID                 string
	Queue              string
	Type               string
	Payload            json.RawMessage
	State              string
	RunAt              time.Time
	Attempt            int
	MaxAttempts        int
	RetryPolicy        json.RawMessage // {"initialDelayMs","multiplier","maxDelayMs"} or nil
	Deadline           *time.Time
	ExecutionTimeoutMs *int64
	ConcurrencyKey     *string
	Tags               []string
	CreatedAt          time.Time
	UpdatedAt          time.Time
	LeaseOwner         *string
	LeaseExpiresAt     *time.Time
	StartedAt          *time.Time
	FinishedAt         *time.Time
	Result             json.RawMessage
	LastError          json.RawMessage
	PurgedAt           *time.Time
	PurgedBy           *string
	PurgeReason        *string
}

// BindingInfo is what may be shown of a key binding: never the raw key.
type BindingInfo struct {
	Scope         string
	KeyPreview    string
	KeyDigest     string
	KeyLength     int
	JobID         string
	Mode          string
	RequestDigest string
	TTLMs         int64 // 0: no time limit (a key lifetime without a TTL)
	CreatedAt     time.Time
	ExpiresAt     time.Time // zero: no time limit
	HoldUntil     HoldUntil // the key's lifetime, or empty
	Expired       bool
	Schedule      *string
	MaxWaitMs     *int64
}

// KeyDescription is what operators may see of a scoped key (DescribeKey).
type KeyDescription struct {
	Scope           string
	KeyPreview      string
	KeyDigest       string
	KeyLength       int
	LegacyKeyDigest string // digest of the pre-HMAC SHA-256 hash
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// GetJob reads a job by id; nil when no job has it.
func (q *Queue) GetJob(ctx context.Context, jobID string) (*Job, error) {
	if err := q.usable(); err != nil {
		return nil, err
	}
	if !uuidPattern.MatchString(jobID) {
		return nil, newValidationError(ValidationIssue{Option: "jobId", Rule: "must be a UUID"})
	}
	var j Job
	var payload, retry, result, lastError *string
	err := q.pool.QueryRow(ctx, `select id::text, queue, type, payload::text, state, run_at, attempt, max_attempts,
	    retry_policy::text, deadline, execution_timeout_ms, concurrency_key, tags, created_at, updated_at, lease_owner,
	    lease_expires_at, started_at, finished_at, result::text, last_error::text, purged_at, purged_by, purge_reason
	  from workhorse.job where id = $1::uuid`, jobID).Scan(&j.ID, &j.Queue, &j.Type, &payload, &j.State, &j.RunAt,
		&j.Attempt, &j.MaxAttempts, &retry, &j.Deadline, &j.ExecutionTimeoutMs, &j.ConcurrencyKey, &j.Tags, &j.CreatedAt,
		&j.UpdatedAt, &j.LeaseOwner, &j.LeaseExpiresAt, &j.StartedAt, &j.FinishedAt, &result, &lastError, &j.PurgedAt,
		&j.PurgedBy, &j.PurgeReason)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, newDatabaseError("getJob", err)
	}
	raw := func(s *string) json.RawMessage {
		if s == nil {
			return nil
		}
		return json.RawMessage(*s)
	}
	j.Payload, j.RetryPolicy, j.Result, j.LastError = raw(payload), raw(retry), raw(result), raw(lastError)
	if j.Tags == nil {
		j.Tags = []string{}
	}
	return &j, nil
}

func checkScopedKey(key, scope string) (string, error) {
	var is issues
	checkKey(&is, "key", key)
	var given *string
	if scope != "" {
		given = &scope
	}
	scope = checkScope(&is, "scope", given)
	if len(is) > 0 {
		return "", newValidationError(is...)
	}
	return scope, nil
}

// FindBinding looks up the binding of a scoped key (hashed here; the raw key is never sent), live
// or expired, made before or after the HMAC upgrade; nil when there is none. Scope "" is "default".
func (q *Queue) FindBinding(ctx context.Context, key, scope string) (*BindingInfo, error) {
	if err := q.usable(); err != nil {
		return nil, err
	}
	scope, err := checkScopedKey(key, scope)
	if err != nil {
		return nil, err
	}
	if err := q.prepare(ctx, true); err != nil {
		return nil, err
	}
	q.mu.Lock()
	secret := q.secret
	q.mu.Unlock()
	var b BindingInfo
	var hash []byte
	var expires *time.Time
	err = q.pool.QueryRow(ctx, `select `+bindingColumns+`
	    from workhorse.key_binding b where b.scope = $1 and b.key_hash = any($2::bytea[])
	   order by b.expires_at desc limit 1`, scope, [][]byte{KeyHash(secret, scope, key), LegacyKeyHash(scope, key)}).
		Scan(&b.Scope, &hash, &b.JobID, &b.Mode, &b.KeyPreview, &b.KeyLength, &b.RequestDigest, &b.TTLMs,
			&b.CreatedAt, &expires, &b.Expired, &b.Schedule, &b.MaxWaitMs, &b.HoldUntil)
	if expires != nil {
		b.ExpiresAt = *expires
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, newDatabaseError("findBinding", err)
	}
	b.KeyDigest = KeyDigestOf(hash)
	return &b, nil
}

// DescribeKey is what operators may see of a scoped key: preview, digest, length (no database
// access beyond loading the installation secret once).
func (q *Queue) DescribeKey(ctx context.Context, key, scope string) (KeyDescription, error) {
	if err := q.usable(); err != nil {
		return KeyDescription{}, err
	}
	scope, err := checkScopedKey(key, scope)
	if err != nil {
		return KeyDescription{}, err
	}
	if err := q.prepare(ctx, true); err != nil {
		return KeyDescription{}, err
	}
	q.mu.Lock()
	secret := q.secret
	q.mu.Unlock()
	return KeyDescription{Scope: scope, KeyPreview: KeyPreviewOf(key), KeyDigest: KeyDigestOf(KeyHash(secret, scope, key)),
		KeyLength: KeyLengthOf(key), LegacyKeyDigest: KeyDigestOf(LegacyKeyHash(scope, key))}, nil
}
