package workhorse

import (
	"context"
	"math"
	"math/rand"
	"testing"
)

// randomPayload builds a JSON value of Go's own types (maps, slices, float64, strings, bools, nil).
func randomPayload(r *rand.Rand, depth int) any {
	keys := []string{"a", "b", "aa", "é", "z", "ab", "\U0001f600", "\ufffd", "", "Z", "10", "2"}
	strs := []string{"x", "", "a\"b\\c", "\n\t\u0001\u001f", "\u2028", "é😀", "\u007f", "ключ"}
	n := 6
	if depth < 3 {
		n = 9
	}
	switch r.Intn(n) {
	case 0:
		return nil
	case 1:
		return r.Intn(2) == 0
	case 2:
		return float64(r.Int63n(1<<53)) - float64(1<<52)
	case 3:
		return []float64{1e21, 1.5e-7, -1e-7, 1e-6, 5e-324, math.MaxFloat64, 0.1, -2.5e22, 42}[r.Intn(9)]
	case 4:
		return (r.Float64() - 0.5) * math.Pow(10, float64(r.Intn(61)-30))
	case 5:
		return strs[r.Intn(len(strs))] + string(rune(0x20+r.Intn(0x2FE0)))
	case 6:
		a := make([]any, r.Intn(4))
		for i := range a {
			a[i] = randomPayload(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for i := r.Intn(5); i > 0; i-- {
			m[keys[r.Intn(len(keys))]] = randomPayload(r, depth+1)
		}
		return m
	}
}

// The jsonb text a keyed request sends is PostgreSQL's own text of the same jsonb (the text
// PostgreSQL digests for the fingerprint).
func TestPayloadJSONBTextIsPostgresText(t *testing.T) {
	pool := newPool(t)
	r := rand.New(rand.NewSource(20261202))
	var canonical, own []string
	for i := 0; i < 400; i++ {
		cp, err := encodePayload(randomPayload(r, 0), 1<<20, "payload")
		if err != nil {
			t.Fatal(err)
		}
		canonical, own = append(canonical, cp.Text), append(own, cp.JSONBText)
	}
	rows, err := pool.Query(context.Background(),
		"select a::jsonb::text, b::jsonb::text from unnest($1::text[], $2::text[]) as u(a, b)", canonical, own)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var fromCanonical, fromOwn string
		if err := rows.Scan(&fromCanonical, &fromOwn); err != nil {
			t.Fatal(err)
		}
		if fromCanonical != own[i] || fromOwn != own[i] {
			t.Errorf("%s: PostgreSQL writes %q (and %q from ours), we wrote %q", canonical[i], fromCanonical, fromOwn, own[i])
		}
		i++
	}
	if i != len(own) {
		t.Fatalf("%d rows for %d payloads", i, len(own))
	}
}
