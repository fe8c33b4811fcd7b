package workhorse

import (
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
