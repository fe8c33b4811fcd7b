package workhorse

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The conformance file's numbers as PostgreSQL gives them back (scripts/conformance.ts,
// "payloads as PostgreSQL gives them back"): a payload stored by PostgreSQL is read back as its
// jsonb text, numbers written out without exponents (1e23 as 100000000000000000000000), and a Go
// program that enqueues that text again (a job's Payload is a json.RawMessage) must send the same
// payload. `integerLiterals` says how each integer literal past 2^53 in JSON text is read.

type roundTripFile struct {
	RoundTrip []struct {
		Name             string `json:"name"`
		PayloadText      string `json:"payloadText"`
		PayloadJSONBText string `json:"payloadJsonbText"`
		PayloadCanonical string `json:"payloadCanonical"`
		PayloadDigest    string `json:"payloadDigest"`
	} `json:"roundTrip"`
	IntegerLiterals []struct {
		Literal          string `json:"literal"`
		PayloadCanonical string `json:"payloadCanonical"`
		PayloadJSONBText string `json:"payloadJsonbText"`
		Error            string `json:"error"`
	} `json:"integerLiterals"`
}

func loadRoundTrip(t *testing.T) roundTripFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "sdk", "conformance", "enqueue.json"))
	if err != nil {
		t.Fatalf("the conformance file: %v", err)
	}
	var f roundTripFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.RoundTrip) < 4 || len(f.IntegerLiterals) < 10 {
		t.Fatalf("the conformance file has %d round-trip payloads and %d integer literals", len(f.RoundTrip), len(f.IntegerLiterals))
	}
	return f
}

// Each integer literal, as JSON text (a json.RawMessage): the double it is, written as TypeScript
// writes it, or the file's refusal.
func TestConformanceIntegerLiterals(t *testing.T) {
	for _, c := range loadRoundTrip(t).IntegerLiterals {
		got, err := encodePayload(json.RawMessage(c.Literal), 1<<20, "payload")
		if c.Error != "" {
			want := []ValidationIssue{{Option: "payload", Rule: c.Error + " (at $)", Path: "$"}}
			v, ok := err.(*EnqueueValidationError)
			if !ok || !reflect.DeepEqual(v.Issues, want) {
				t.Errorf("%s: got %v, want %+v", c.Literal, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.Literal, err)
		} else if got.Text != c.PayloadCanonical || got.JSONBText != c.PayloadJSONBText {
			t.Errorf("%s: got %s and %s, want %s and %s", c.Literal, got.Text, got.JSONBText, c.PayloadCanonical, c.PayloadJSONBText)
		}
	}
}

// Each round-trip payload, as its text and as PostgreSQL's text of it, as JSON text and as Go
// values: the file's canonical text, jsonb text and digest.
func TestConformanceRoundTripTexts(t *testing.T) {
	for _, c := range loadRoundTrip(t).RoundTrip {
		for _, text := range []string{c.PayloadText, c.PayloadJSONBText} {
			var values any
			if err := json.Unmarshal([]byte(text), &values); err != nil {
				t.Fatal(err)
			}
			for _, payload := range []any{json.RawMessage(text), values} {
				got, err := encodePayload(payload, 1<<20, "payload")
				if err != nil {
					t.Errorf("%s: %T of %s: %v", c.Name, payload, text, err)
					continue
				}
				if got.Text != c.PayloadCanonical || got.JSONBText != c.PayloadJSONBText ||
					hex.EncodeToString(digest8(got.JSONBText)) != c.PayloadDigest {
					t.Errorf("%s: %T of %s: got %s and %s", c.Name, payload, text, got.Text, got.JSONBText)
				}
			}
		}
	}
}

// Each round-trip payload enqueued with a key, read back from PostgreSQL (GetJob's Payload, the
// jsonb text) and enqueued again with the same key, as that json.RawMessage and as the Go values it
// holds: a replay of the same job.
func TestConformanceRoundTrip(t *testing.T) {
	q, pool := newTestQueue(t)
	ctx := context.Background()
	for i, c := range loadRoundTrip(t).RoundTrip {
		opts := EnqueueOptions{Idempotency: &Idempotency{Key: fmt.Sprintf("round-trip-%d-%s", i, unique("k")), Scope: Ptr("conformance-round-trip")}}
		first, err := q.EnqueueWithResult(ctx, "t", json.RawMessage(c.PayloadText), opts)
		if err != nil || first.Outcome != Accepted {
			t.Errorf("%s: the first enqueue: %+v %v", c.Name, first, err)
			continue
		}
		job, err := q.GetJob(ctx, first.JobID)
		if err != nil || job == nil {
			t.Fatalf("%s: getJob: %v %v", c.Name, job, err)
		}
		var stored string
		if err := pool.QueryRow(ctx, "select payload::text from workhorse.job where id = $1::uuid", first.JobID).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if stored != c.PayloadJSONBText || string(job.Payload) != stored {
			t.Errorf("%s: PostgreSQL stored %s (GetJob: %s), want %s", c.Name, stored, job.Payload, c.PayloadJSONBText)
		}
		var values any
		if err := json.Unmarshal(job.Payload, &values); err != nil {
			t.Fatal(err)
		}
		for _, again := range []any{job.Payload, values} {
			r, err := q.EnqueueWithResult(ctx, "t", again, opts)
			if err != nil || r.Outcome != Replayed || r.JobID != first.JobID {
				t.Errorf("%s: enqueued again as %T: %+v %v, want a replay of %s", c.Name, again, r, err, first.JobID)
			}
		}
	}
}
