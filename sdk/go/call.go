package workhorse

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
)

// newJobID is a UUIDv7: 48 bits of Unix milliseconds, then random bits (ids sort by creation time).
func newJobID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(time.Now().UnixMilli())
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	b[6] = (b[6] & 0x0f) | 0x70
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

type enqueueRow struct {
	ordinal       int
	jobID         string
	outcome       string
	requestDigest *string
	reason        *string
}

// run sends the requests in one round trip. Keyed calls (every request keyed) repeat themselves
// after connection loss or a retryable SQLSTATE, proposing the same job ids again with p_retry set,
// so a try whose commit was not acknowledged is recognised and reported as accepted.
//
// tx non-nil: the statement runs in the caller's transaction (docs/clients-go.md, "Inside your
// transaction"): never repeated (the caller owns the transaction), and its NOTIFY is part of it, so
// workers are woken only if the caller commits.
func (q *Queue) run(ctx context.Context, rs []*normalizedRequest, tx pgx.Tx) ([]EnqueueResult, error) {
	allKeyed, anyKeyed := true, false
	for _, r := range rs {
		allKeyed = allKeyed && r.Keyed != nil
		anyKeyed = anyKeyed || r.Keyed != nil
	}
	if err := q.prepare(ctx, anyKeyed); err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.Keyed != nil {
			r.Keyed.Key = q.identify(r.Keyed.Scope, r.Keyed.key)
		}
	}
	ids := make([]string, len(rs))
	for i := range ids {
		ids[i] = newJobID()
	}
	if q.isDistributed() {
		bucketIDs(rs, ids)
	}
	if tx != nil || !allKeyed || q.retryAttempts <= 1 {
		rows, err := q.send(ctx, rs, ids, false, tx)
		if err != nil {
			return nil, err
		}
		return q.report(rs, ids, rows, false, tx != nil), nil
	}
	for attempt := 1; ; attempt++ {
		rows, err := q.send(ctx, rs, ids, attempt > 1, nil)
		if err == nil {
			return q.report(rs, ids, rows, attempt > 1, false), nil
		}
		var dbErr *DatabaseError
		retryable := errors.As(err, &dbErr) && dbErr.Retryable
		if !retryable || attempt >= q.retryAttempts || ctx.Err() != nil {
			// Exhausted: a retried call whose last try still failed retryably. A later try that fails
			// for good (a conflict, a validation refusal, any error not retryable) is the call's answer.
			if retryable && attempt > 1 {
				q.count(func(s *RetryStats) { s.Exhausted++ })
			}
			return nil, err
		}
		q.count(func(s *RetryStats) {
			if attempt == 1 {
				s.RetriedCalls++
			}
			s.Retries++
		})
		ceiling := 25 * time.Millisecond << (attempt - 1)
		if ceiling > q.retryMaxDelay || ceiling <= 0 {
			ceiling = q.retryMaxDelay
		}
		wait := ceiling/2 + time.Duration(mrand.Int63n(int64(ceiling/2)+1))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, newDatabaseError("enqueue", ctx.Err())
		case <-t.C:
		}
	}
}

// isDistributed reports the layout prepare read (the Citus layout keeps a keyed job in its key's bucket).
func (q *Queue) isDistributed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.distributed
}

// keyBucket is the distributed layout's bucket (0..4095) of a keyed request: the first 12 bits of
// SHA-256(scope, 0x00, key hash), as workhorse.key_bucket() computes it.
func keyBucket(scope string, keyHash []byte) int {
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write(keyHash)
	d := h.Sum(nil)
	return int(d[0])<<4 | int(d[1])>>4
}

// bucketedID is the job id with its last 12 bits set to the bucket (workhorse.id_bucket() reads them back).
func bucketedID(id string, bucket int) string {
	return id[:33] + fmt.Sprintf("%03x", bucket)
}

// idBucket is the bucket a job id carries (its last 12 bits).
func idBucket(id string) int {
	var b int
	_, _ = fmt.Sscanf(id[33:], "%03x", &b)
	return b
}

// bucketIDs gives every keyed request its key's bucket in its job id (the same ids on every try);
// a keyless job stays in the random bucket its id has.
func bucketIDs(rs []*normalizedRequest, ids []string) {
	for i, r := range rs {
		if r.Keyed != nil {
			ids[i] = bucketedID(ids[i], keyBucket(r.Keyed.Key.Scope, r.Keyed.Key.KeyHash))
		}
	}
}

func (q *Queue) count(f func(*RetryStats)) {
	q.statsMu.Lock()
	f(&q.stats)
	q.statsMu.Unlock()
}

// send is one round trip: enqueue_one for one request, enqueue_batch for more. p_notify is always
// false: the wake-up goes after the commit, in a statement of its own (waker).
func (q *Queue) send(ctx context.Context, rs []*normalizedRequest, ids []string, retry bool, tx pgx.Tx) ([]enqueueRow, error) {
	// Through the pool the statement commits alone and the waker sends the NOTIFY after it; in the
	// caller's transaction the NOTIFY goes with the transaction.
	var db interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	} = q.pool
	notify := false
	if tx != nil {
		db, notify = tx, q.notify
	}
	var sql string
	var args []any
	if len(rs) == 1 && q.isDistributed() {
		sql, args = enqueueOneAtSQL, oneAtValues(rs[0], ids[0], notify, retry)
	} else if len(rs) == 1 {
		sql, args = oneStatement(rs[0], ids[0], notify, retry)
	} else {
		sql, args = enqueueBatchSQL, batchValues(rs, ids, notify, retry)
	}
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, q.translate(err, rs)
	}
	defer rows.Close()
	var out []enqueueRow
	for rows.Next() {
		var r enqueueRow
		if err := rows.Scan(&r.ordinal, &r.jobID, &r.outcome, &r.requestDigest, &r.reason); err != nil {
			return nil, q.translate(err, rs)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, q.translate(err, rs)
	}
	if len(out) != len(rs) {
		return nil, newDatabaseError("enqueue", fmt.Errorf("expected %d result rows, got %d", len(rs), len(out)))
	}
	return out, nil
}

// report turns PostgreSQL's rows into results in input order, records replays, coalesces and
// non-replaceable requests in the observation log, and wakes the workers of queues that got a job.
func (q *Queue) report(rs []*normalizedRequest, ids []string, rows []enqueueRow, retried, inTx bool) []EnqueueResult {
	out := make([]EnqueueResult, len(rows))
	now := time.Now()
	var woken []string
	for _, row := range rows {
		i := row.ordinal - 1
		r := rs[i]
		outcome := Outcome(row.outcome)
		if retried && outcome != Accepted && row.jobID == ids[i] {
			outcome = Accepted // an earlier try of this very call committed it
			q.count(func(s *RetryStats) { s.RecoveredAccepts++ })
		}
		res := EnqueueResult{JobID: row.jobID, Outcome: outcome}
		if outcome == Accepted && q.notify && !inTx {
			woken = append(woken, r.Queue)
		}
		if outcome == NonReplaceable && row.reason != nil {
			res.Reason = *row.reason
		}
		if k := r.Keyed; k != nil {
			res.KeyPreview, res.KeyDigest, res.KeyLength = k.Key.KeyPreview, k.Key.KeyDigest, k.Key.KeyLength
			if outcome != Accepted && outcome != Replaced {
				o := observation{At: now, Outcome: string(outcome), Queue: r.Queue, Type: r.Type, Scope: k.Key.Scope,
					KeyPreview: k.Key.KeyPreview, KeyDigest: k.Key.KeyDigest, KeyLength: k.Key.KeyLength, JobID: &row.jobID,
					Source: nonEmpty(r.Source)}
				if outcome == NonReplaceable {
					o.Reason, o.RejectedRequestDigest = row.reason, row.requestDigest
				} else {
					o.StoredRequestDigest = row.requestDigest
				}
				q.recorder.record(o)
			}
		}
		out[i] = res
	}
	q.waker.wake(woken)
	return out
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type conflictDetail struct {
	Ordinal               int      `json:"ordinal"`
	ExistingJobID         *string  `json:"existingJobId"`
	ExistingMode          string   `json:"existingMode"`
	ConflictingFields     []string `json:"conflictingFields"`
	PayloadPaths          []string `json:"payloadPaths"`
	PayloadPathsTruncated bool     `json:"payloadPathsTruncated"`
	StoredRequestDigest   string   `json:"storedRequestDigest"`
	RejectedRequestDigest string   `json:"rejectedRequestDigest"`
}

// translate turns driver errors into typed ones: the one place SQLSTATEs are interpreted.
func (q *Queue) translate(err error, rs []*normalizedRequest) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "WH409":
			var d conflictDetail
			if json.Unmarshal([]byte(pg.Detail), &d) == nil && d.Ordinal >= 1 && d.Ordinal <= len(rs) && rs[d.Ordinal-1].Keyed != nil {
				r := rs[d.Ordinal-1]
				k := r.Keyed.Key
				c := &EnqueueIdempotencyConflictError{Scope: k.Scope, KeyPreview: k.KeyPreview, KeyDigest: k.KeyDigest,
					KeyLength: k.KeyLength, ExistingMode: d.ExistingMode, ConflictingFields: d.ConflictingFields,
					StoredRequestDigest: d.StoredRequestDigest, RejectedRequestDigest: d.RejectedRequestDigest,
					Ordinal: d.Ordinal, PayloadPaths: d.PayloadPaths, PayloadPathsTruncated: d.PayloadPathsTruncated, cause: err}
				if d.ExistingJobID != nil {
					c.ExistingJobID = *d.ExistingJobID
				}
				if c.ConflictingFields == nil {
					c.ConflictingFields = []string{}
				}
				q.recorder.record(observation{At: time.Now(), Outcome: "conflict", Queue: r.Queue, Type: r.Type, Scope: k.Scope,
					KeyPreview: k.KeyPreview, KeyDigest: k.KeyDigest, KeyLength: k.KeyLength, JobID: d.ExistingJobID,
					ConflictingFields: c.ConflictingFields, PayloadPaths: d.PayloadPaths,
					StoredRequestDigest: &c.StoredRequestDigest, RejectedRequestDigest: &c.RejectedRequestDigest,
					Source: nonEmpty(r.Source)})
				return c
			}
		case "23514", "22P05", "22P02":
			// Client validation mirrors the stored bounds; reaching here means input slipped past it
			// (or the clocks of this process and PostgreSQL disagree about "now").
			switch pg.ConstraintName {
			case "job_payload_depth":
				return newValidationError(ValidationIssue{Option: "payload",
					Rule: "must be nested at most 100 levels deep (objects and arrays); refused by PostgreSQL"})
			case "job_deadline_after_run_at":
				return newValidationError(ValidationIssue{Option: "options.deadline", Rule: "must be after runAt (which defaults to PostgreSQL's now())"})
			}
			option := "request"
			if pg.DataTypeName != "" {
				option = "request (" + pg.DataTypeName + ")"
			}
			return newValidationError(ValidationIssue{Option: option, Rule: "rejected by PostgreSQL: " + pg.Message})
		}
	}
	return newDatabaseError("enqueue", err)
}
