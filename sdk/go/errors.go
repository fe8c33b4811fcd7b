package workhorse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgconn"
)

// ValidationIssue is one failed input rule. Option is a dotted path in the TypeScript core's
// spelling (options.idempotency.ttlMs, requests[3].payload), so a message reads the same from
// every client.
type ValidationIssue struct {
	Option string
	Rule   string
	// Path is where inside the payload the rule failed ($.items[1]["due at"]): paths only, never values.
	Path string
}

// EnqueueValidationError is bad input. It is returned before anything is sent to PostgreSQL, so
// nothing is written.
type EnqueueValidationError struct {
	// Option is the first failing option, Rule the rule it broke.
	Option string
	Rule   string
	// Issues lists every failing option, in input order.
	Issues []ValidationIssue
}

func newValidationError(issues ...ValidationIssue) *EnqueueValidationError {
	if len(issues) == 0 {
		issues = []ValidationIssue{{Option: "(input)", Rule: "is invalid"}}
	}
	return &EnqueueValidationError{Option: issues[0].Option, Rule: issues[0].Rule, Issues: issues}
}

func (e *EnqueueValidationError) Error() string {
	more := ""
	if len(e.Issues) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(e.Issues)-1)
	}
	return "workhorse: " + e.Option + ": " + e.Rule + more
}

// EnqueueIdempotencyConflictError: a live scoped key is bound to a job whose request differs from
// this one. Nothing was written: the whole call (the whole batch) rolled back. It never carries the
// raw key, only its preview, digest and length.
type EnqueueIdempotencyConflictError struct {
	Scope      string
	KeyPreview string
	KeyDigest  string
	KeyLength  int
	// ExistingJobID is the job that owns the key; empty only inside a batch whose earlier request
	// for the same new key differs from this one (that job was never created).
	ExistingJobID string
	// ExistingMode is the mode holding the key: idempotency, debounce or throttle.
	ExistingMode string
	// ConflictingFields are the sorted fingerprint fields that differ (plus "mode" when the key is
	// held in another mode).
	ConflictingFields     []string
	StoredRequestDigest   string
	RejectedRequestDigest string
	// Ordinal is the 1-based position of the rejected request in its batch (1 for a single enqueue).
	Ordinal int
	// PayloadPaths are the JSON paths whose values differ, when the payload differs (at most 100).
	PayloadPaths          []string
	PayloadPathsTruncated bool
	cause                 error
}

func (e *EnqueueIdempotencyConflictError) Error() string {
	owner := "an earlier request of the same batch"
	if e.ExistingJobID != "" {
		owner = "job " + e.ExistingJobID
	}
	return fmt.Sprintf("workhorse: idempotency key %s (digest %s, scope %s) is bound to %s with a different request: %s",
		e.KeyPreview, e.KeyDigest, strconv.Quote(e.Scope), owner, differing(e.ConflictingFields))
}

// differing is "payload differs", "payload and type differ", "maxAttempts, payload and type differ".
func differing(fields []string) string {
	switch len(fields) {
	case 0:
		return "the request differs"
	case 1:
		return fields[0] + " differs"
	}
	return strings.Join(fields[:len(fields)-1], ", ") + " and " + fields[len(fields)-1] + " differ"
}

// Unwrap gives the driver's error (a *pgconn.PgError with SQLSTATE WH409).
func (e *EnqueueIdempotencyConflictError) Unwrap() error { return e.cause }

// DatabaseError is a database failure the client does not translate. Unwrap gives the driver's
// error (a *pgconn.PgError when PostgreSQL answered, a network error when the connection broke).
type DatabaseError struct {
	Op string
	// SQLState is PostgreSQL's code, empty when the server did not answer.
	SQLState string
	// Retryable: the same call may simply be repeated (serialization failure, deadlock, too many
	// connections, lock timeout, server shutting down or starting, connection loss).
	Retryable bool
	Err       error
}

func (e *DatabaseError) Error() string { return "workhorse: " + e.Op + " failed: " + e.Err.Error() }
func (e *DatabaseError) Unwrap() error { return e.Err }

func newDatabaseError(op string, err error) *DatabaseError {
	d := &DatabaseError{Op: op, Err: err, Retryable: isRetryable(err)}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		d.SQLState = pg.Code
	}
	return d
}

// ErrQueueClosed is returned by every call after Close.
var ErrQueueClosed = errors.New("workhorse: this Queue was closed; create a new Queue to enqueue again")

var retryableStates = map[string]bool{
	"40001": true, // serialization_failure
	"40P01": true, // deadlock_detected
	"53300": true, // too_many_connections
	"55P03": true, // lock_not_available
	"57P01": true, // admin_shutdown
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now
}

// isRetryable: a failure after which the same call may succeed (a retryable SQLSTATE or a broken
// connection). A cancelled or expired context never is.
func isRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return retryableStates[pg.Code] || strings.HasPrefix(pg.Code, "08")
	}
	return isConnectionLoss(err)
}

// isConnectionLoss: the connection broke or could not be opened (the statement may or may not have run).
func isConnectionLoss(err error) bool {
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	msg := err.Error()
	for _, m := range []string{"conn closed", "connection refused", "connection reset", "broken pipe",
		"unexpected EOF", "failed to connect", "server closed the connection", "closed pool", "no such file or directory"} {
		if strings.Contains(msg, m) {
			return !strings.Contains(msg, "closed pool")
		}
	}
	return false
}
