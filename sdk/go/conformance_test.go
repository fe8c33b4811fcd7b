package workhorse

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The conformance file (sdk/conformance/enqueue.json, generated from the TypeScript core by
// scripts/conformance.ts): for every case, the Go client computes the same canonical payload, key
// hash, preview, digest, length and enqueue_one parameters, or the same validation issues (option,
// rule, path). The file's field digests and request digest are PostgreSQL's, computed from the
// values it receives (the client sends p_field_digests null); a test-only reference computation
// below checks them.

type conformanceFile struct {
	SecretHex         string                  `json:"secretHex"`
	FingerprintFields []string                `json:"fingerprintFields"`
	JobID             string                  `json:"jobId"`
	Params            []struct{ Name string } `json:"enqueueOneParams"`
	Cases             []conformanceCase       `json:"cases"`
	Buckets           []struct {
		Scope         string `json:"scope"`
		KeyHashHex    string `json:"keyHashHex"`
		Bucket        int    `json:"bucket"`
		BucketedJobID string `json:"bucketedJobId"`
	} `json:"buckets"`
	WorkerCalls []struct {
		Function string   `json:"function"`
		Args     []string `json:"args"`
		Columns  []struct {
			Name string `json:"name"`
		} `json:"columns"`
	} `json:"workerCalls"`
}

type conformanceCase struct {
	Name  string   `json:"name"`
	Needs []string `json:"needs"`
	Input struct {
		Type            json.RawMessage            `json:"type"`
		PayloadText     string                     `json:"payloadText"`
		Options         map[string]json.RawMessage `json:"options"`
		MaxPayloadBytes *int                       `json:"maxPayloadBytes"`
	} `json:"input"`
	Expect struct {
		OK *struct {
			PayloadCanonical   string          `json:"payloadCanonical"`
			PayloadJSONBText   string          `json:"payloadJsonbText"`
			PayloadDigest      string          `json:"payloadDigest"`
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
				HoldUntil     *string `json:"holdUntil"`
				FieldDigests  string  `json:"fieldDigests"`
				HoldDigest    *string `json:"holdUntilDigest"`
				RequestDigest string  `json:"requestDigest"`
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

// maxDurationMs is the largest time.Duration in milliseconds (about 292 years).
const maxDurationMs = float64(math.MaxInt64 / int64(time.Millisecond))

// beyondGo says whether an option's JSON holds a number no Go int or time.Duration (as milliseconds) holds.
func beyondGo(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case float64:
			return math.Abs(x) > maxDurationMs
		case map[string]any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// caseOptions turns a case's options (the TypeScript names) into EnqueueOptions, and says why
// when Go cannot express them. Every option given is a non-nil pointer, whatever its value: an
// explicit 0 or "" is checked as the other clients check it.
func caseOptions(raw map[string]json.RawMessage) (EnqueueOptions, string) {
	var o EnqueueOptions
	for name, r := range raw {
		if beyondGo(r) {
			return o, "a number in " + name + " beyond what Go's int and time.Duration hold"
		}
	}
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
	date := func(r json.RawMessage) *time.Time {
		t, _ := time.Parse(time.RFC3339Nano, str(r))
		return &t
	}
	// optional reads field name of m as a pointer: nil when the case leaves it out.
	optStr := func(m map[string]json.RawMessage, name string) *string {
		if r, ok := m[name]; ok {
			return Ptr(str(r))
		}
		return nil
	}
	optMs := func(m map[string]json.RawMessage, name string) *time.Duration {
		if r, ok := m[name]; ok {
			return Ptr(msDuration(r))
		}
		return nil
	}
	optHold := func(m map[string]json.RawMessage) *HoldUntil {
		if s := optStr(m, "holdUntil"); s != nil {
			return Ptr(HoldUntil(*s))
		}
		return nil
	}
	keyed := func(r json.RawMessage) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(r, &m)
		return m
	}
	for name, r := range raw {
		switch name {
		case "queue":
			o.Queue = Ptr(str(r))
		case "runAt":
			o.RunAt = date(r)
		case "deadline":
			o.Deadline = date(r)
		case "maxAttempts":
			f := num(r)
			if f != math.Trunc(f) {
				return o, "a fractional maxAttempts (Go's MaxAttempts is an int)"
			}
			o.MaxAttempts = Ptr(int(f))
		case "executionTimeoutMs":
			o.ExecutionTimeout = Ptr(msDuration(r))
		case "concurrencyKey":
			o.ConcurrencyKey = Ptr(str(r))
		case "source":
			o.Source = Ptr(str(r))
		case "tags":
			_ = json.Unmarshal(r, &o.Tags)
		case "retryPolicy":
			var m map[string]json.RawMessage
			_ = json.Unmarshal(r, &m)
			o.RetryPolicy = &RetryPolicy{Type: str(m["type"]), Delay: msDuration(m["delayMs"]), InitialDelay: msDuration(m["initialDelayMs"]),
				Multiplier: int(num(m["multiplier"])), MaxDelay: msDuration(m["maxDelayMs"])}
		case "idempotency":
			m := keyed(r)
			o.Idempotency = &Idempotency{Key: str(m["key"]), Scope: optStr(m, "scope"), TTL: optMs(m, "ttlMs"), HoldUntil: optHold(m)}
		case "debounce":
			m := keyed(r)
			o.Debounce = &Debounce{Key: str(m["key"]), Scope: optStr(m, "scope"), Window: msDuration(m["windowMs"]),
				Schedule: optStr(m, "schedule"), MaxWait: optMs(m, "maxWaitMs"), HoldUntil: optHold(m)}
		case "throttle":
			m := keyed(r)
			o.Throttle = &Throttle{Key: str(m["key"]), Scope: optStr(m, "scope"), Window: msDuration(m["windowMs"])}
		default:
			return o, "option " + name
		}
	}
	return o, ""
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
var goExpresses = map[string]bool{"debounce: unknown schedule": true, "retryPolicy: unknown type": true,
	"holdUntil: unknown value": true, "holdUntil: empty": true}

// surrogateEscape is a \uD800-\uDFFF escape in the file's JSON text: JSON.stringify writes a valid
// surrogate pair as the character itself, so each one is a lone surrogate.
var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F][0-9a-fA-F]{2}`)

// goCannotState says why Go's typed API cannot state a case's type and options ("" when it can).
// With the payload as JSON text, a lone surrogate in the payload can be stated; elsewhere it cannot.
func goCannotState(c conformanceCase, payloadAsText bool) string {
	for _, need := range c.Needs {
		if need == "loneSurrogate" && payloadAsText && !surrogateEscape.MatchString(c.rawTypeAndOptions()) {
			continue
		}
		if !goExpresses[c.Name] {
			return fmt.Sprintf("needs %v", c.Needs)
		}
	}
	if _, ok := c.typeString(); !ok {
		return "a type that is not a string"
	}
	if _, cannot := caseOptions(c.Input.Options); cannot != "" {
		return cannot
	}
	return ""
}

// typeString is the case's type when it is a string.
func (c conformanceCase) typeString() (string, bool) {
	var s string
	return s, json.Unmarshal(c.Input.Type, &s) == nil
}

// rawTypeAndOptions is the case's type and options as the file writes them (JSON text).
func (c conformanceCase) rawTypeAndOptions() string {
	var b strings.Builder
	b.Write(c.Input.Type)
	for _, raw := range c.Input.Options {
		b.Write(raw)
	}
	return b.String()
}

// A payload form: how a case's payloadText becomes the payload Go is given, or why it cannot.
type payloadForm struct {
	name   string
	asText bool
	of     func(text string) (any, string)
}

var payloadForms = []payloadForm{
	// Go values, as encoding/json reads the text into an any (float64 numbers, map[string]any).
	{name: "values", of: func(text string) (any, string) {
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return nil, "encoding/json cannot read it into Go values: " + err.Error()
		}
		return v, ""
	}},
	// The JSON text itself, as a json.RawMessage: numbers, escapes and surrogates as written.
	{name: "json.RawMessage", asText: true, of: func(text string) (any, string) { return json.RawMessage(text), "" }},
}

// goRuleFor is where Go's own documented rules give another answer than the file: as JSON text, an
// integer past 2^53 that is neither exactly a double nor a double as JavaScript writes it is refused
// (JSON.parse would store a different number; docs/clients-go.md). Nil: the file's answer.
func goRuleFor(form payloadForm, c conformanceCase) []ValidationIssue {
	if form.asText && c.Name == "payload: big integers are doubles" {
		return []ValidationIssue{{Option: "payload", Path: "$[0]",
			Rule: "must be a number a double holds exactly (an integer past 2^53 must be a double itself); send it as a string (at $[0])"}}
	}
	return nil
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
	// Every case runs twice: the payload as Go values and as a json.RawMessage. Cases whose input
	// Go cannot state are not run (they are not skipped tests: Go's types rule the input out):
	// loneSurrogate outside the payload (a Go string cannot hold an unpaired UTF-16 surrogate;
	// encoding/json turns it into U+FFFD), optionShape (Go's typed options cannot take another
	// shape), explicitNull (Go's typed options have no null: a nil pointer is an option left out), a type that is not a string, and as Go values a number no float64 holds (1e400).
	for _, form := range payloadForms {
		form := form
		t.Run(form.name, func(t *testing.T) {
			ran := 0
			var inexpressible []string
			for _, c := range f.Cases {
				c := c
				reason := goCannotState(c, form.asText)
				var payload any
				if reason == "" {
					payload, reason = form.of(c.Input.PayloadText)
				}
				if reason != "" {
					inexpressible = append(inexpressible, c.Name+" ("+reason+")")
					continue
				}
				ran++
				t.Run(c.Name, func(t *testing.T) {
					checkCase(t, f, secret, c, payload, goRuleFor(form, c))
				})
			}
			t.Logf("conformance (%s): %d cases checked; not stated in Go: %v", form.name, ran, inexpressible)
			if ran+len(inexpressible) != len(f.Cases) {
				t.Fatalf("%d cases checked and %d not stated, of %d", ran, len(inexpressible), len(f.Cases))
			}
			if ran < 100 {
				t.Fatalf("only %d cases ran", ran)
			}
		})
	}
}

// checkCase normalizes one case and compares everything with the file (or with `goRule` when Go's
// own rules answer otherwise).
func checkCase(t *testing.T, f conformanceFile, secret []byte, c conformanceCase, payload any, goRule []ValidationIssue) {
	t.Helper()
	opts, _ := caseOptions(c.Input.Options)
	max := defaultPayloadBytes
	if c.Input.MaxPayloadBytes != nil {
		max = *c.Input.MaxPayloadBytes
	}
	typ, _ := c.typeString()
	n, err := normalize(typ, payload, opts, max, "", "", time.Now())
	if c.Expect.Error != nil || goRule != nil {
		want := goRule
		if want == nil {
			want = c.Expect.Error.Issues
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
	// Keyed requests send PostgreSQL's jsonb text (their payload digest is of it); others the canonical text.
	sent := e.PayloadCanonical
	if e.Keyed != nil {
		sent = e.PayloadJSONBText
	}
	check("payload sent", n.PayloadJSON, sent)
	if cp, err := encodePayload(payload, max, "payload"); err == nil {
		check("payloadCanonical", cp.Text, e.PayloadCanonical)
		check("payloadJsonbText", cp.JSONBText, e.PayloadJSONBText)
		check("payloadDigest", hex.EncodeToString(digest8(cp.JSONBText)), e.PayloadDigest)
	}
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
		var hold *string
		if k.HoldUntil != "" {
			hold = &k.HoldUntil
		}
		check("holdUntil", hold, w.HoldUntil)
		// What PostgreSQL computes from the values sent (the client sends no digest), against the
		// reference computation.
		fd := referenceFieldDigests(t, f.FingerprintFields, n, k.TTLMs)
		check("fieldDigests", hex.EncodeToString(fd), w.FieldDigests)
		var holdDigest *string
		if k.HoldUntil != "" {
			s := hex.EncodeToString(referenceHoldUntilDigest(k.HoldUntil))
			holdDigest = &s
		}
		check("holdUntilDigest", holdDigest, w.HoldDigest)
		rd := sha256.Sum256(append(append([]byte{}, fd...), referenceHoldUntilDigest(k.HoldUntil)...))
		check("requestDigest", hex.EncodeToString(rd[:]), w.RequestDigest)
	}
	// The enqueue_one parameters of a retry (every parameter), as the file lists them. The
	// payload is compared in its canonical text (the TypeScript core sends JavaScript's key
	// order, Go sends jsonb's; PostgreSQL stores both the same).
	_, values := oneStatement(n, f.JobID, false, true)
	for i, p := range f.Params {
		got, want := paramText(values[i]), e.Params[p.Name]
		if p.Name == "p_payload" {
			want = sent
		}
		check(p.Name, got, want)
	}
}

// digest8 is a fingerprint field's digest: the first 8 bytes of SHA-256 of its JSON form.
func digest8(text string) []byte {
	d := sha256.Sum256([]byte(text))
	return d[:8]
}

// referenceFieldDigests is a keyed request's 88 bytes of field digests as PostgreSQL computes them
// from the values it receives (workhorse.request_field_digests): the digest of each field's JSON
// form (JavaScript's JSON.stringify of the value), in the file's fingerprintFields order but
// holdUntil, the payload's of its jsonb text (what a keyed request sends). Test code only.
func referenceFieldDigests(t *testing.T, fields []string, n *normalizedRequest, ttlMs int64) []byte {
	t.Helper()
	str := func(s string) string {
		var b strings.Builder
		jsString(&b, s)
		return b.String()
	}
	forms := map[string]string{
		"concurrencyKey": "null", "deadline": "null", "executionTimeoutMs": "null",
		"maxAttempts": fmt.Sprint(n.MaxAttempts), "payload": n.PayloadJSON, "queue": str(n.Queue),
		"retryPolicy": n.RetryPolicy.json(), "runAt": `{"omitted":true}`, "ttlMs": "null", "type": str(n.Type),
	}
	if n.ConcurrencyKey != nil {
		forms["concurrencyKey"] = str(*n.ConcurrencyKey)
	}
	if n.Deadline != nil {
		forms["deadline"] = str(isoMillis(*n.Deadline))
	}
	if n.ExecutionTimeoutMs != nil {
		forms["executionTimeoutMs"] = fmt.Sprint(*n.ExecutionTimeoutMs)
	}
	if n.RunAt != nil {
		forms["runAt"] = str(isoMillis(*n.RunAt))
	}
	tags := make([]string, len(n.Tags))
	for i, tag := range n.Tags {
		tags[i] = str(tag)
	}
	forms["tags"] = "[" + strings.Join(tags, ",") + "]"
	if ttlMs != 0 { // 0: a key lifetime without a TTL
		forms["ttlMs"] = fmt.Sprint(ttlMs)
	}
	out := make([]byte, 0, 88)
	for _, name := range fields {
		if name == "holdUntil" {
			continue
		}
		form, ok := forms[name]
		if !ok {
			t.Fatalf("fingerprint field %q has no reference form", name)
		}
		out = append(out, digest8(form)...)
	}
	return out
}

// referenceHoldUntilDigest is the 8 bytes PostgreSQL appends after the field digests for a key
// lifetime (workhorse.hold_until_digest): the digest of its JSON form; none without one.
func referenceHoldUntilDigest(h string) []byte {
	if h == "" {
		return nil
	}
	return digest8(`"` + h + `"`)
}

// TestBatchSendsNoFieldDigests: enqueue_batch's p_field_digests is one null per request, keyed or
// not (as enqueue_one's p_field_digests is null in every case of the file): PostgreSQL digests
// the values it receives.
func TestBatchSendsNoFieldDigests(t *testing.T) {
	var rs []*normalizedRequest
	for i, o := range []EnqueueOptions{
		{Idempotency: &Idempotency{Key: "k1"}},
		{},
		{Debounce: &Debounce{Key: "k2", Window: time.Second}},
	} {
		n, err := normalize("t", map[string]any{"a": i}, o, defaultPayloadBytes, "", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, n)
	}
	values := batchValues(rs, []string{"a", "b", "c"}, false, false)
	if got, ok := values[18].([][]byte); !ok || len(got) != 3 || got[0] != nil || got[1] != nil || got[2] != nil {
		t.Fatalf("p_field_digests: got %#v, want three nulls", values[18])
	}
}

// isoMillis is a time as the conformance file writes it (ISO 8601, UTC, milliseconds).
func isoMillis(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Key previews hide control and format characters by one table every client shares
// (sdk/conformance/key-preview-hidden.json), not by the Unicode version of Go's unicode package.
func TestConformanceKeyPreviewTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "sdk", "conformance", "key-preview-hidden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		UnicodeVersion string      `json:"unicodeVersion"`
		Ranges         [][2]string `json:"ranges"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	var want, got [][2]rune
	for _, r := range table.Ranges {
		var lo, hi rune
		fmt.Sscanf(r[0], "%x", &lo)
		fmt.Sscanf(r[1], "%x", &hi)
		want = append(want, [2]rune{lo, hi})
	}
	for _, r := range keyPreviewHidden.R16 {
		got = append(got, [2]rune{rune(r.Lo), rune(r.Hi)})
	}
	for _, r := range keyPreviewHidden.R32 {
		got = append(got, [2]rune{rune(r.Lo), rune(r.Hi)})
	}
	if keyPreviewUnicodeVersion != table.UnicodeVersion || !reflect.DeepEqual(got, want) {
		t.Fatalf("key_preview_table.go (Unicode %s) is not sdk/conformance/key-preview-hidden.json (Unicode %s): run npx tsx scripts/key-preview-table.ts",
			keyPreviewUnicodeVersion, table.UnicodeVersion)
	}
	previewOf := func(r rune) string { return KeyPreviewOf(string(r) + "bcdefghi") } // 9 code points: 3 shown
	for _, r := range want {
		if previewOf(r[0]) != "\uFFFDbc…" || previewOf(r[1]) != "\uFFFDbc…" {
			t.Errorf("U+%04X..U+%04X: previews %q and %q, want U+FFFD", r[0], r[1], previewOf(r[0]), previewOf(r[1]))
		}
		if r[0] > 0 && strings.ContainsRune(previewOf(r[0]-1), '\uFFFD') {
			t.Errorf("U+%04X is hidden, outside the table", r[0]-1)
		}
		if strings.ContainsRune(previewOf(r[1]+1), '\uFFFD') {
			t.Errorf("U+%04X is hidden, outside the table", r[1]+1)
		}
	}
}

// TestConformanceBuckets: the distributed layout's bucket of each key of the file, and the job id
// carrying it, as the TypeScript core (and workhorse.key_bucket on Citus) computes them.
func TestConformanceBuckets(t *testing.T) {
	f := loadConformance(t)
	if len(f.Buckets) == 0 {
		t.Fatal("the conformance file has no buckets")
	}
	for _, b := range f.Buckets {
		hash, err := hex.DecodeString(b.KeyHashHex)
		if err != nil {
			t.Fatal(err)
		}
		if got := keyBucket(b.Scope, hash); got != b.Bucket {
			t.Errorf("keyBucket(%q, %s) = %d, want %d", b.Scope, b.KeyHashHex, got, b.Bucket)
		}
		if got := bucketedID(f.JobID, b.Bucket); got != b.BucketedJobID || idBucket(got) != b.Bucket {
			t.Errorf("bucketedID(%s, %d) = %s (bucket %d), want %s", f.JobID, b.Bucket, got, idBucket(got), b.BucketedJobID)
		}
	}
}
