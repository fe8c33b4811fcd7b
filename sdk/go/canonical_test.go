package workhorse

import (
	"encoding/json"
	"math"
	"testing"
)

func nan() float64 { return math.NaN() }

func TestCanonicalPayload(t *testing.T) {
	cases := []struct {
		in          any
		text        string
		storedBytes int
	}{
		{42.0, "42", 2},
		{map[string]any{"b": 1, "a": []any{true, nil, "x"}}, `{"a":[true,null,"x"],"b":1}`, len(`{"a": [true, null, "x"], "b": 1}`)},
		{1e21, "1e+21", 22},
		{-1e-7, "-1e-7", len("-0.0000001")},
		{0.1, "0.1", 3},
		{math.Copysign(0, -1), "0", 1},
		{"<&>\u2028\b\u001f", `"<&>` + "\u2028" + `\b\u001f"`, len(`"<&>` + "\u2028" + `\b\u001f"`)},
		{struct {
			A int `json:"a"`
		}{3}, `{"a":3}`, len(`{"a": 3}`)},
	}
	for _, c := range cases {
		got, err := encodePayload(c.in, 1<<20, "payload")
		if err != nil {
			t.Fatalf("%v: %v", c.in, err)
		}
		if got.Text != c.text || got.StoredBytes != c.storedBytes {
			t.Errorf("%#v: got %q (%d bytes), want %q (%d)", c.in, got.Text, got.StoredBytes, c.text, c.storedBytes)
		}
	}
}

func TestKeyPreview(t *testing.T) {
	for key, want := range map[string]string{"ab": "…", "abc": "a…", "capture:INV-42": "capt…", "0123456789012345678901234567": "01234567…", "\u0000\u0000\u0000x": "\uFFFD…"} {
		if got := KeyPreviewOf(key); got != want {
			t.Errorf("%q: %q want %q", key, got, want)
		}
	}
}

// What encoding/json writes for a Go value is read back exactly (payload_text.go): Go values and
// JSON text that TypeScript and Python accept are accepted, with the same canonical text.
func TestCanonicalPayloadGoValues(t *testing.T) {
	accepted := []struct {
		in   any
		text string
	}{
		{`C:\ufffd\file`, `"C:\\ufffd\\file"`}, // six characters of text, not U+FFFD
		{map[string]any{`\ufffd`: `\\ufffd`}, `{"\\ufffd":"\\\\ufffd"}`},
		{"\ufffd", "\"\ufffd\""},                    // U+FFFD itself
		{json.RawMessage(`"\ufffd"`), "\"\ufffd\""}, // the caller's own escape of U+FFFD
		{json.RawMessage(`"\uFFFD"`), "\"\ufffd\""},
		{int64(1) << 62, "4611686018427388000"}, // 2^62 is a double: written as JavaScript writes it
		{uint64(1) << 63, "9223372036854776000"},
		{int64(-1) << 63, "-9223372036854776000"},
		{json.RawMessage(`18446744073709551616`), "18446744073709552000"},
		{json.RawMessage(`18446744073709552000`), "18446744073709552000"}, // the same double, as JavaScript writes it
		{json.RawMessage(`[1e-400]`), "[0]"},
		{int64(1) << 53, "9007199254740992"},
	}
	for _, c := range accepted {
		got, err := encodePayload(c.in, 1<<20, "payload")
		if err != nil {
			t.Errorf("%#v: %v", c.in, err)
		} else if got.Text != c.text {
			t.Errorf("%#v: got %s, want %s", c.in, got.Text, c.text)
		}
	}
	raw := json.RawMessage(`{"s":"\ud800x"}`)
	refused := []struct {
		in   any
		rule string
	}{
		{map[string]any{"a": []any{"x\xffy"}}, "has a string that PostgreSQL jsonb cannot store (not valid UTF-8) (at $.a[0])"},
		{map[string]string{"k\xff": "v"}, "has a key that PostgreSQL cannot store (not valid UTF-8) (at $[\"k\ufffd\"])"},
		{"\xed\xa0\x80", "has a string that PostgreSQL jsonb cannot store (not valid UTF-8) (at $)"}, // bytes of a surrogate in a Go string
		{json.RawMessage("[\"a\xffb\"]"), "has a string that PostgreSQL jsonb cannot store (not valid UTF-8) (at $[0])"},
		{&raw, "has a string that PostgreSQL jsonb cannot store (NUL character or lone surrogate) (at $.s)"},
		{json.RawMessage(`{"\udc00x":1}`), `has a key that PostgreSQL cannot store (NUL or lone surrogate) (at $["\udc00x"])`},
		// Inside a value, \ufffd is what encoding/json writes for a byte that is not UTF-8.
		{map[string]any{"r": json.RawMessage(`"\ufffd"`)}, "has a string that PostgreSQL jsonb cannot store (not valid UTF-8) (at $.r)"},
		{int64(1)<<60 + 1, "must be a number a double holds exactly (an integer past 2^53 must be a double itself); send it as a string (at $)"},
		{json.RawMessage(`{"n":-1e400}`), "must contain only finite numbers (found -Infinity) (at $.n)"},
		// 2^53 + 1 reads as the double 2^53: a different number.
		{json.RawMessage(`[9007199254740993]`), "must be a number a double holds exactly (an integer past 2^53 must be a double itself); send it as a string (at $[0])"},
		{int64(1)<<53 + 1, "must be a number a double holds exactly (an integer past 2^53 must be a double itself); send it as a string (at $)"},
	}
	for _, c := range refused {
		_, err := encodePayload(c.in, 1<<20, "payload")
		v, ok := err.(*EnqueueValidationError)
		if !ok || len(v.Issues) != 1 || v.Issues[0].Rule != c.rule {
			t.Errorf("%#v: got %v, want the rule %q", c.in, err, c.rule)
		}
	}
}
