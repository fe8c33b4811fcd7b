package workhorse

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// The conformance file (sdk/conformance/enqueue.json, generated from the TypeScript core by
// scripts/conformance.ts): for every case, the Go client computes the same canonical payload, key
// hash, preview, digest, length, field digests and enqueue_one parameters, or the same validation
// issues (option, rule, path).

type conformanceFile struct {
	SecretHex string                  `json:"secretHex"`
	JobID     string                  `json:"jobId"`
	Params    []struct{ Name string } `json:"enqueueOneParams"`
	Cases     []conformanceCase       `json:"cases"`
}

type conformanceCase struct {
	Name  string   `json:"name"`
	Needs []string `json:"needs"`
	Input struct {
		Type            any                        `json:"type"`
		PayloadText     string                     `json:"payloadText"`
		Options         map[string]json.RawMessage `json:"options"`
		MaxPayloadBytes *int                       `json:"maxPayloadBytes"`
	} `json:"input"`
	Expect struct {
		OK *struct {
			PayloadCanonical   string          `json:"payloadCanonical"`
			PayloadBytes       int             `json:"payloadBytes"`
			Type               string          `json:"type"`
			Queue              string          `json:"queue"`
			RunAt              *string         `json:"runAt"`
			Deadline           *string         `json:"deadline"`
			MaxAttempts        int             `json:"maxAttempts"`
			RetryPolicy        json.RawMessage `json:"retryPolicy"`
			ExecutionTimeoutMs *int64          `json:"executionTimeoutMs"`
			ConcurrencyKey     *string         `json:"concurrencyKey"`
			Tags               []string        `json:"tags"`
			Source             *string         `json:"source"`
			Keyed              *struct {
				Mode          string  `json:"mode"`
				Scope         string  `json:"scope"`
				KeyHash       string  `json:"keyHash"`
				LegacyKeyHash string  `json:"legacyKeyHash"`
				KeyDigest     string  `json:"keyDigest"`
				KeyPreview    string  `json:"keyPreview"`
				KeyLength     int     `json:"keyLength"`
				TTLMs         int64   `json:"ttlMs"`
				Schedule      *string `json:"schedule"`
				MaxWaitMs     *int64  `json:"maxWaitMs"`
				FieldDigests  string  `json:"fieldDigests"`
			} `json:"keyed"`
			Params map[string]any `json:"enqueueOneParams"`
		} `json:"ok"`
		Error *struct {
			Issues []ValidationIssue `json:"issues"`
		} `json:"error"`
	} `json:"expect"`
}

func loadConformance(t *testing.T) conformanceFile {
	t.Helper()
	path := filepath.Join(repoRoot, "sdk", "conformance", "enqueue.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the conformance file: %v", err)
	}
	var f conformanceFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// msDuration is a JSON number of milliseconds as a Duration (fractions kept, so that they are refused).
func msDuration(raw json.RawMessage) time.Duration {
	var f float64
	_ = json.Unmarshal(raw, &f)
	return time.Duration(math.Round(f * float64(time.Millisecond)))
}

// caseOptions turns a case's options (the TypeScript names) into EnqueueOptions. It also returns
// the option paths given explicitly as a Go zero value ("" or 0), which Go reads as "not given"
// (EnqueueOptions' documented convention), and whether Go can express the options at all.
func caseOptions(raw map[string]json.RawMessage) (EnqueueOptions, map[string]bool, string) {
	var o EnqueueOptions
	zero := map[string]bool{}
	str := func(r json.RawMessage) string {
		var s string
		_ = json.Unmarshal(r, &s)
		return s
	}
	num := func(r json.RawMessage) float64 {
		var f float64
		_ = json.Unmarshal(r, &f)
		return f
	}
	date := func(r json.RawMessage) time.Time {
		t, _ := time.Parse(time.RFC3339Nano, str(r))
		return t
	}
	noteZero := func(path string, r json.RawMessage) {
		if s := string(r); s == `""` || s == "0" {
			zero["options."+path] = true
		}
	}
	keyed := func(prefix string, r json.RawMessage) (map[string]json.RawMessage, string, string) {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(r, &m)
		if s, ok := m["scope"]; ok {
			noteZero(prefix+".scope", s)
		}
		return m, str(m["key"]), str(m["scope"])
	}
	for name, r := range raw {
		switch name {
		case "queue":
			o.Queue = str(r)
			noteZero(name, r)
		case "runAt", "deadline":
			d := date(r)
			if d.IsZero() {
				// 0001-01-01T00:00:00Z is Go's zero time.Time: "not given".
				return o, zero, "the instant 0001-01-01T00:00:00Z (Go's zero time.Time means \"not given\")"
			}
			if name == "runAt" {
				o.RunAt = d
			} else {
				o.Deadline = d
			}
		case "maxAttempts":
			f := num(r)
			if f != math.Trunc(f) {
				return o, zero, "a fractional maxAttempts (Go's MaxAttempts is an int)"
			}
			o.MaxAttempts = int(f)
			noteZero(name, r)
		case "executionTimeoutMs":
			o.ExecutionTimeout = msDuration(r)
			noteZero(name, r)
		case "concurrencyKey":
			o.ConcurrencyKey = str(r)
			noteZero(name, r)
		case "source":
			o.Source = str(r)
		case "tags":
			_ = json.Unmarshal(r, &o.Tags)
		case "retryPolicy":
			var m map[string]json.RawMessage
			_ = json.Unmarshal(r, &m)
			o.RetryPolicy = &RetryPolicy{Type: str(m["type"]), Delay: msDuration(m["delayMs"]), InitialDelay: msDuration(m["initialDelayMs"]),
				Multiplier: int(num(m["multiplier"])), MaxDelay: msDuration(m["maxDelayMs"])}
		case "idempotency":
			m, key, scope := keyed(name, r)
			o.Idempotency = &Idempotency{Key: key, Scope: scope}
			if ttl, ok := m["ttlMs"]; ok {
				o.Idempotency.TTL = msDuration(ttl)
				noteZero(name+".ttlMs", ttl)
			}
		case "debounce":
			m, key, scope := keyed(name, r)
			o.Debounce = &Debounce{Key: key, Scope: scope, Window: msDuration(m["windowMs"]), Schedule: str(m["schedule"]), MaxWait: msDuration(m["maxWaitMs"])}
		case "throttle":
			m, key, scope := keyed(name, r)
			o.Throttle = &Throttle{Key: key, Scope: scope, Window: msDuration(m["windowMs"])}
		default:
			return o, zero, "option " + name
		}
	}
	return o, zero, ""
}

// paramText is a parameter as the conformance file writes it: bytea as \x<hex>, times in ISO 8601.
func paramText(v any) any {
	switch x := v.(type) {
	case []byte:
		return `\x` + hex.EncodeToString(x)
	case time.Time:
		return isoMillis(x)
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	}
	return v
}

// Cases marked optionShape whose options Go's types can still express (a string field's value).
var goExpresses = map[string]bool{"debounce: unknown schedule": true, "retryPolicy: unknown type": true}

// goCannotState says why Go's typed API cannot state a case's input ("" when it can).
func goCannotState(c conformanceCase) string {
	if len(c.Needs) > 0 && !goExpresses[c.Name] {
		return fmt.Sprintf("needs %v", c.Needs)
	}
	if _, ok := c.Input.Type.(string); !ok {
		return "a type that is not a string"
	}
	if _, _, cannot := caseOptions(c.Input.Options); cannot != "" {
		return cannot
	}
	return ""
}

func TestConformance(t *testing.T) {
	f := loadConformance(t)
	secret, err := hex.DecodeString(f.SecretHex)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Params) != len(oneParamTypes) {
		t.Fatalf("enqueue_one has %d parameters in the file, %d here", len(f.Params), len(oneParamTypes))
	}
	ran, zeroCases := 0, 0
	// Cases whose input Go cannot state are not run (they are not skipped tests: Go's types rule the
	// input out): loneSurrogate (a Go string cannot hold an unpaired UTF-16 surrogate; encoding/json
	// turns it into U+FFFD), optionShape (Go's typed options cannot take another shape), explicitNull
	// (Go's typed options have no null: a nil pointer or a zero value is an option left out), a type
	// that is not a string.
	var inexpressible []string
	for _, c := range f.Cases {
		c := c
		if reason := goCannotState(c); reason != "" {
			inexpressible = append(inexpressible, c.Name+" ("+reason+")")
			continue
		}
		typ := c.Input.Type.(string)
		opts, zero, _ := caseOptions(c.Input.Options)
		t.Run(c.Name, func(t *testing.T) {
			var payload any
			if err := json.Unmarshal([]byte(c.Input.PayloadText), &payload); err != nil {
				t.Fatalf("payloadText: %v", err)
			}
			max := defaultPayloadBytes
			if c.Input.MaxPayloadBytes != nil {
				max = *c.Input.MaxPayloadBytes
			}
			ran++
			n, err := normalize(typ, payload, opts, max, "", "", time.Now())
			if c.Expect.Error != nil {
				want := []ValidationIssue{}
				for _, i := range c.Expect.Error.Issues {
					if !zero[i.Option] {
						want = append(want, i)
					}
				}
				if len(want) < len(c.Expect.Error.Issues) {
					zeroCases++ // a zero value is "not given" in Go: its issue is not expected
				}
				if len(want) == 0 {
					if err != nil {
						t.Fatalf("Go reads the zero values %v as not given, so the request is valid; got %v", zero, err)
					}
					return
				}
				v, ok := err.(*EnqueueValidationError)
				if !ok {
					t.Fatalf("want issues %+v, got %v", want, err)
				}
				if !reflect.DeepEqual(v.Issues, want) {
					t.Fatalf("issues:\n got %+v\nwant %+v", v.Issues, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("want ok, got %v", err)
			}
			e := c.Expect.OK
			check := func(what string, got, want any) {
				t.Helper()
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: got %#v, want %#v", what, got, want)
				}
			}
			check("payloadCanonical", n.PayloadJSON, e.PayloadCanonical)
			check("payloadBytes", n.payloadBytes, e.PayloadBytes)
			check("type", n.Type, e.Type)
			check("queue", n.Queue, e.Queue)
			check("maxAttempts", n.MaxAttempts, e.MaxAttempts)
			check("tags", n.Tags, e.Tags)
			var compact bytes.Buffer
			_ = json.Compact(&compact, e.RetryPolicy)
			check("retryPolicy", n.RetryPolicy.json(), compact.String())
			check("executionTimeoutMs", n.ExecutionTimeoutMs, e.ExecutionTimeoutMs)
			check("concurrencyKey", n.ConcurrencyKey, e.ConcurrencyKey)
			isoOrNil := func(p *time.Time) *string {
				if p == nil {
					return nil
				}
				s := isoMillis(*p)
				return &s
			}
			check("runAt", isoOrNil(n.RunAt), e.RunAt)
			check("deadline", isoOrNil(n.Deadline), e.Deadline)
			check("source", nonEmpty(n.Source), e.Source)
			if (n.Keyed == nil) != (e.Keyed == nil) {
				t.Fatalf("keyed: got %v, want %v", n.Keyed, e.Keyed)
			}
			if k := n.Keyed; k != nil {
				k.Key = identify(secret, false, k.Scope, k.key)
				w := e.Keyed
				check("mode", k.Mode, w.Mode)
				check("scope", k.Key.Scope, w.Scope)
				check("keyHash", hex.EncodeToString(k.Key.KeyHash), w.KeyHash)
				check("legacyKeyHash", hex.EncodeToString(LegacyKeyHash(k.Scope, k.key)), w.LegacyKeyHash)
				check("keyDigest", k.Key.KeyDigest, w.KeyDigest)
				check("keyPreview", k.Key.KeyPreview, w.KeyPreview)
				check("keyLength", k.Key.KeyLength, w.KeyLength)
				check("ttlMs", k.TTLMs, w.TTLMs)
				check("schedule", k.Schedule, w.Schedule)
				check("maxWaitMs", k.MaxWaitMs, w.MaxWaitMs)
				check("fieldDigests", hex.EncodeToString(k.FieldDigests), w.FieldDigests)
			}
			// The enqueue_one parameters of a retry (every parameter), as the file lists them. The
			// payload is compared in its canonical text (the TypeScript core sends JavaScript's key
			// order, Go sends jsonb's; PostgreSQL stores both the same).
			_, values := oneStatement(n, f.JobID, false, true)
			for i, p := range f.Params {
				got, want := paramText(values[i]), e.Params[p.Name]
				if p.Name == "p_payload" {
					want = e.PayloadCanonical
				}
				check(p.Name, got, want)
			}
		})
	}
	t.Logf("conformance: %d cases checked, %d with Go zero values read as not given; not stated in Go: %v", ran, zeroCases, inexpressible)
	if ran+len(inexpressible) != len(f.Cases) {
		t.Fatalf("%d cases checked and %d not stated, of %d", ran, len(inexpressible), len(f.Cases))
	}
	if ran < 100 {
		t.Fatalf("only %d cases ran", ran)
	}
}
