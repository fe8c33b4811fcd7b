package workhorse

import (
	"strings"
	"testing"
)

// A conflict's message says which fields differ in words that agree with their number, as the
// TypeScript and Python clients say it.
func TestConflictMessageAgreesWithItsFields(t *testing.T) {
	for _, c := range []struct {
		fields []string
		words  string
	}{
		{[]string{"payload"}, "payload differs"},
		{[]string{"payload", "type"}, "payload and type differ"},
		{[]string{"maxAttempts", "payload", "type"}, "maxAttempts, payload and type differ"},
	} {
		err := &EnqueueIdempotencyConflictError{Scope: "s", KeyPreview: "ke…", KeyDigest: "0123456789ab",
			ExistingJobID: "01900000-0000-7000-8000-000000000000", ConflictingFields: c.fields}
		if !strings.HasSuffix(err.Error(), "with a different request: "+c.words) {
			t.Errorf("%v: %q does not end with %q", c.fields, err.Error(), c.words)
		}
	}
}
