package workhorse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxPayloadDepth is how deeply objects and arrays may nest in a payload ({} and [1] are one level).
const maxPayloadDepth = 100

// jsString writes s as JavaScript's JSON.stringify writes a string: `"` and `\` escaped, \b \f \n
// \r \t as short escapes, other C0 controls as \u00xx (lower-case hex), everything else as is.
// PostgreSQL's jsonb text output escapes the same characters the same way.
func jsString(b *strings.Builder, s string) {
	b.WriteByte('"')
	jsStringBody(b, s)
	b.WriteByte('"')
}

// jsStringBody is jsString without the quotes.
func jsStringBody(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
}

// jsNumber formats f as JavaScript's Number#toString (ECMAScript's shortest round-trip form):
// exponent notation below 1e-6 and from 1e21, `1e+21` / `1e-7` spelling, -0 as 0.
func jsNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	abs := math.Abs(f)
	if abs < 1e-6 || abs >= 1e21 {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Go writes e-07 / e+21; JavaScript writes e-7 / e+21.
		if i := strings.IndexByte(s, 'e'); i >= 0 {
			mant, exp := s[:i], s[i+1:]
			sign := exp[0]
			digits := strings.TrimLeft(exp[1:], "0")
			if digits == "" {
				digits = "0"
			}
			return mant + "e" + string(sign) + digits
		}
		return s
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// pgNumber is how PostgreSQL's numeric writes the number that JavaScript spells `js`: never with an
// exponent (1e+21 is 22 digits, -1.5e-7 is -0.00000015).
func pgNumber(js string) string {
	i := strings.IndexByte(js, 'e')
	if i < 0 {
		return js
	}
	mant, exp := js[:i], js[i+1:]
	e, _ := strconv.Atoi(exp)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	intPart, frac := mant, ""
	if dot := strings.IndexByte(mant, '.'); dot >= 0 {
		intPart, frac = mant[:dot], mant[dot+1:]
	}
	digits := intPart + frac
	point := len(intPart) + e // position of the decimal point within digits
	var out string
	switch {
	case point <= 0:
		out = "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		out = digits + strings.Repeat("0", point-len(digits))
	default:
		out = digits[:point] + "." + digits[point:]
	}
	if neg {
		out = "-" + out
	}
	return out
}

// canonicalPayload is a payload as every Workhorse client sends it: JSON's data model, not Go's.
type canonicalPayload struct {
	// Text is the JSON text sent to PostgreSQL: numbers as JavaScript writes doubles (42.0 is 42),
	// object keys in jsonb's order (shorter first, then bytewise), no insignificant whitespace.
	Text string
	// StoredBytes is octet_length(payload::text) as PostgreSQL stores it (jsonb's text form).
	StoredBytes int
	// JSONBText is PostgreSQL's own text of the same jsonb (payload::text): the canonical text with
	// ", " and ": " as separators and numbers without exponents. Keyed requests send it; PostgreSQL
	// digests the payload it receives for the fingerprint (docs/clients.md, payloadJsonbText).
	JSONBText string
}

var maxSafeInteger = math.Pow(2, 53)

// doubleLiteral: the integer literal lit, which reads as the double f, is that double: its exact
// value (4611686018427387904, 2^62), or its shortest digits as JavaScript writes them (js,
// 4611686018427388000) or as PostgreSQL writes them (pg, 100000000000000000000000 for 1e23: what
// payload::text gives back for a payload TypeScript stored). Any other integer past 2^53
// (9007199254740993, 100000000000000000000001) would be stored as a different number.
func doubleLiteral(lit string, f float64, js, pg string) bool {
	return lit == js || lit == pg || exactDouble(lit, f)
}

// exactDouble: the integer literal lit is exactly the double f (2^62 is; 2^53 + 1 is not).
func exactDouble(lit string, f float64) bool {
	n, ok := new(big.Int).SetString(lit, 10)
	if !ok {
		return false
	}
	d, acc := big.NewFloat(f).Int(nil)
	return acc == big.Exact && d.Cmp(n) == 0
}

// encodePayload turns any Go value into its canonical JSON text, through encoding/json (so struct
// tags, json.Marshaler and json.RawMessage apply), refusing what JSON or PostgreSQL's jsonb cannot
// hold unchanged. The error is an *EnqueueValidationError naming `option`.
func encodePayload(payload any, maxBytes int, option string) (canonicalPayload, error) {
	fail := func(rule, path string) (canonicalPayload, error) {
		if path != "" {
			rule = rule + " (at " + path + ")"
		}
		return canonicalPayload{}, newValidationError(ValidationIssue{Option: option, Rule: rule, Path: path})
	}
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(payload); err != nil {
		return fail("must be JSON-serialisable: "+strings.TrimPrefix(err.Error(), "json: "), "")
	}
	// Read back exactly (payload_text.go): a lone surrogate escape, a string that was not UTF-8 and
	// the six characters \ufffd each stay what they are.
	v, err := readPayloadText(raw.Bytes(), callerWroteText(payload))
	if err != nil {
		return fail("must be JSON-serialisable: "+err.Error(), "")
	}
	w := &canonicalWriter{}
	if msg, path := w.write(v, 0, "$"); msg != "" {
		return fail(msg, path)
	}
	if w.lower > maxBytes {
		return fail(fmt.Sprintf("must be at most %d bytes as PostgreSQL stores it (jsonb text; this one is larger)", maxBytes), "")
	}
	if w.stored > maxBytes {
		return fail(fmt.Sprintf("must be at most %d bytes as PostgreSQL stores it (jsonb text; got %d)", maxBytes, w.stored), "")
	}
	return canonicalPayload{Text: w.b.String(), StoredBytes: w.stored, JSONBText: w.pg.String()}, nil
}

type canonicalWriter struct {
	b      strings.Builder
	pg     strings.Builder // PostgreSQL's jsonb text of the same value
	stored int             // bytes of PostgreSQL's jsonb text for the same value
	// lower is the TypeScript core's early estimate (UTF-16 units, each number counted as one
	// unit plus its exponent expansion): above the bound, the rule says "this one is larger"
	// instead of the exact size, as the TypeScript core's does.
	lower int
}

func utf16Units(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// jsonStringUnits is the UTF-16 length JSON.stringify gives s (quotes and escapes included).
func jsonStringUnits(s string) int {
	units := utf16Units(s) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\b' || c == '\t' || c == '\n' || c == '\f' || c == '\r':
			units++
		case c < 0x20:
			units += 5
		}
	}
	return units
}

// write appends v; on a refusal it returns the rule and the JSON path where it failed.
func (w *canonicalWriter) write(v any, depth int, path string) (string, string) {
	switch x := v.(type) {
	case nil:
		w.b.WriteString("null")
		w.pg.WriteString("null")
		w.stored += 4
		w.lower += 4
	case bool:
		if x {
			w.b.WriteString("true")
			w.pg.WriteString("true")
			w.stored += 4
			w.lower += 4
		} else {
			w.b.WriteString("false")
			w.pg.WriteString("false")
			w.stored += 5
			w.lower += 5
		}
	case json.Number:
		lit := string(x)
		f, err := strconv.ParseFloat(lit, 64)
		switch {
		case math.IsInf(f, 1):
			return "must contain only finite numbers (found Infinity)", path // as JSON.parse reads 1e400
		case math.IsInf(f, -1):
			return "must contain only finite numbers (found -Infinity)", path
		case err != nil:
			return "must contain only finite numbers (found " + lit + ")", path
		}
		s := jsNumber(f)
		pgs := pgNumber(s)
		if !strings.ContainsAny(lit, ".eE") && math.Abs(f) >= maxSafeInteger && !doubleLiteral(lit, f, s, pgs) {
			// A JSON number is a double: this integer would be stored as a nearby one.
			return "must be a number a double holds exactly (an integer past 2^53 must be a double itself); send it as a string", path
		}
		w.b.WriteString(s)
		w.pg.WriteString(pgs)
		w.stored += len(pgs)
		w.lower += 1 + len(pgs) - len(s)
	case string:
		switch stringProblem(x) {
		case nulOrSurrogate:
			return "has a string that PostgreSQL jsonb cannot store (NUL character or lone surrogate)", path
		case notUTF8:
			return "has a string that PostgreSQL jsonb cannot store (not valid UTF-8)", path
		}
		start := w.b.Len()
		jsString(&w.b, x)
		w.pg.WriteString(w.b.String()[start:])
		w.stored += w.b.Len() - start
		w.lower += jsonStringUnits(x)
	case []any:
		if depth >= maxPayloadDepth {
			return fmt.Sprintf("must be nested at most %d levels deep (objects and arrays)", maxPayloadDepth), path
		}
		w.b.WriteByte('[')
		w.pg.WriteByte('[')
		w.stored += 2
		w.lower += containerUnits(len(x), false)
		for i, e := range x {
			if i > 0 {
				w.b.WriteByte(',')
				w.pg.WriteString(", ")
				w.stored += 2 // ", "
			}
			if msg, p := w.write(e, depth+1, path+"["+strconv.Itoa(i)+"]"); msg != "" {
				return msg, p
			}
		}
		w.b.WriteByte(']')
		w.pg.WriteByte(']')
	case map[string]any:
		if depth >= maxPayloadDepth {
			return fmt.Sprintf("must be nested at most %d levels deep (objects and arrays)", maxPayloadDepth), path
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// jsonb's order: shorter (in UTF-8 bytes) first, then bytewise.
		sort.Slice(keys, func(i, j int) bool {
			if len(keys[i]) != len(keys[j]) {
				return len(keys[i]) < len(keys[j])
			}
			return keys[i] < keys[j]
		})
		w.b.WriteByte('{')
		w.pg.WriteByte('{')
		w.stored += 2
		w.lower += containerUnits(len(x), true)
		for i, k := range keys {
			p := path + pathStep(k)
			switch stringProblem(k) {
			case nulOrSurrogate:
				return "has a key that PostgreSQL cannot store (NUL or lone surrogate)", p
			case notUTF8:
				return "has a key that PostgreSQL cannot store (not valid UTF-8)", p
			}
			if i > 0 {
				w.b.WriteByte(',')
				w.pg.WriteString(", ")
				w.stored += 2
			}
			start := w.b.Len()
			jsString(&w.b, k)
			w.pg.WriteString(w.b.String()[start:])
			w.pg.WriteString(": ")
			w.b.WriteByte(':')
			w.stored += w.b.Len() - start + 1 // ": "
			w.lower += jsonStringUnits(k) + 1
			if msg, pp := w.write(x[k], depth+1, p); msg != "" {
				return msg, pp
			}
		}
		w.b.WriteByte('}')
		w.pg.WriteByte('}')
	default:
		return fmt.Sprintf("must be JSON-serialisable: found %T", v), path
	}
	return "", ""
}

// containerUnits: brackets and commas, the spaces after commas, and (objects) after colons.
func containerUnits(count int, object bool) int {
	u := 2
	if count > 0 {
		u = count + 1
	}
	if count > 1 {
		u += count - 1
	}
	if object {
		u += count
	}
	return u
}

// pathStep is one step of a payload path: `.name` for identifiers, `["other"]` otherwise.
func pathStep(k string) string {
	ident := k != ""
	for i, r := range k {
		if !(r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')) {
			ident = false
			break
		}
	}
	if ident {
		return "." + k
	}
	var b strings.Builder
	b.WriteByte('[')
	if utf8.ValidString(k) {
		jsString(&b, k)
	} else {
		jsPathKey(&b, k)
	}
	b.WriteByte(']')
	return b.String()
}

// utf8Chars counts code points (what the TypeScript core calls characters).
func utf8Chars(s string) int { return utf8.RuneCountInString(s) }
