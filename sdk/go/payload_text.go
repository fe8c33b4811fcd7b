package workhorse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Reading back the JSON text encoding/json wrote for a payload, exactly: encoding/json's own
// decoder turns a lone surrogate escape (\ud800) into U+FFFD without a word, so what runs would not
// be what was sent. The strings read here keep every problem visible to the canonical writer:
//
//   - a lone surrogate escape becomes its three-byte surrogate encoding (ED A0..BF xx), which is not
//     UTF-8, and is refused as the TypeScript core refuses a lone surrogate;
//   - the escape \ufffd is what encoding/json writes for each byte of a Go string that is not UTF-8
//     (a real U+FFFD it writes as the character), so it becomes the byte FF (refused as "not valid
//     UTF-8"), except in text the caller wrote (a top-level json.RawMessage), where it is U+FFFD;
//   - bytes that are not UTF-8 (a json.RawMessage or MarshalJSON output copies them through) stay.
//
// The six characters \ufffd inside a Go string are written by encoding/json as \\ufffd: an escaped
// backslash followed by text, read here as the text it is.

// errPayloadText: the encoder's output did not read back (a bug here, not the caller's).
var errPayloadText = errors.New("its JSON text could not be read back")

// readPayloadText reads JSON text into nil, bool, json.Number (the literal as written), string,
// []any and map[string]any (a repeated key keeps its last value). callerText says the text is the
// caller's own (a \ufffd escape there means U+FFFD).
func readPayloadText(text []byte, callerText bool) (any, error) {
	r := &textReader{s: text, callerText: callerText}
	v, err := r.value()
	if err != nil {
		return nil, err
	}
	r.space()
	if r.i != len(r.s) {
		return nil, errPayloadText
	}
	return v, nil
}

// callerWroteText: a top-level json.RawMessage is JSON text the caller wrote itself.
func callerWroteText(payload any) bool {
	switch p := payload.(type) {
	case json.RawMessage:
		return true
	case *json.RawMessage:
		return p != nil
	}
	return false
}

type textReader struct {
	s          []byte
	i          int
	callerText bool
}

func (r *textReader) space() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// literal consumes `word` (true, false, null).
func (r *textReader) literal(word string, v any) (any, error) {
	if !bytes.HasPrefix(r.s[r.i:], []byte(word)) {
		return nil, errPayloadText
	}
	r.i += len(word)
	return v, nil
}

func (r *textReader) value() (any, error) {
	r.space()
	if r.i >= len(r.s) {
		return nil, errPayloadText
	}
	switch c := r.s[r.i]; c {
	case '{':
		r.i++
		m := map[string]any{}
		r.space()
		if r.i < len(r.s) && r.s[r.i] == '}' {
			r.i++
			return m, nil
		}
		for {
			r.space()
			k, err := r.str()
			if err != nil {
				return nil, err
			}
			r.space()
			if r.i >= len(r.s) || r.s[r.i] != ':' {
				return nil, errPayloadText
			}
			r.i++
			v, err := r.value()
			if err != nil {
				return nil, err
			}
			m[k] = v
			if done, err := r.next('}'); err != nil || done {
				return m, err
			}
		}
	case '[':
		r.i++
		a := []any{}
		r.space()
		if r.i < len(r.s) && r.s[r.i] == ']' {
			r.i++
			return a, nil
		}
		for {
			v, err := r.value()
			if err != nil {
				return nil, err
			}
			a = append(a, v)
			if done, err := r.next(']'); err != nil || done {
				return a, err
			}
		}
	case '"':
		return r.str()
	case 't':
		return r.literal("true", true)
	case 'f':
		return r.literal("false", false)
	case 'n':
		return r.literal("null", nil)
	default:
		start := r.i
		for r.i < len(r.s) && strings.IndexByte("+-0123456789.eE", r.s[r.i]) >= 0 {
			r.i++
		}
		if r.i == start {
			return nil, errPayloadText
		}
		return json.Number(r.s[start:r.i]), nil
	}
}

// next consumes `,` (false) or the closing bracket (true).
func (r *textReader) next(closing byte) (bool, error) {
	r.space()
	if r.i < len(r.s) {
		switch r.s[r.i] {
		case ',':
			r.i++
			return false, nil
		case closing:
			r.i++
			return true, nil
		}
	}
	return false, errPayloadText
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var v rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// str reads a string literal exactly (see the top of this file).
func (r *textReader) str() (string, error) {
	if r.i >= len(r.s) || r.s[r.i] != '"' {
		return "", errPayloadText
	}
	r.i++
	start := r.i
	// Most strings have no escape: one slice of the text.
	for r.i < len(r.s) && r.s[r.i] != '"' && r.s[r.i] != '\\' {
		r.i++
	}
	if r.i < len(r.s) && r.s[r.i] == '"' {
		r.i++
		return string(r.s[start : r.i-1]), nil
	}
	out := append([]byte(nil), r.s[start:r.i]...)
	for r.i < len(r.s) {
		c := r.s[r.i]
		switch {
		case c == '"':
			r.i++
			return string(out), nil
		case c != '\\':
			out = append(out, c)
			r.i++
			continue
		}
		if r.i+1 >= len(r.s) {
			return "", errPayloadText
		}
		esc := r.s[r.i+1]
		r.i += 2
		switch esc {
		case '"', '\\', '/':
			out = append(out, esc)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			u, ok := hex4(r.s[r.i:])
			if !ok {
				return "", errPayloadText
			}
			written := string(r.s[r.i : r.i+4])
			r.i += 4
			switch {
			case u >= 0xD800 && u < 0xDC00:
				if r.i+6 <= len(r.s) && r.s[r.i] == '\\' && r.s[r.i+1] == 'u' {
					if lo, ok := hex4(r.s[r.i+2:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
						r.i += 6
						out = utf8.AppendRune(out, 0x10000+(u-0xD800)<<10+(lo-0xDC00))
						continue
					}
				}
				out = appendSurrogate(out, u)
			case u >= 0xDC00 && u <= 0xDFFF:
				out = appendSurrogate(out, u)
			case u == utf8.RuneError && written == "fffd" && !r.callerText:
				out = append(out, 0xFF) // encoding/json's mark for a byte that was not UTF-8
			default:
				out = utf8.AppendRune(out, u)
			}
		default:
			return "", errPayloadText
		}
	}
	return "", errPayloadText
}

// appendSurrogate writes a lone surrogate as its three-byte encoding (not UTF-8, so never stored).
func appendSurrogate(out []byte, u rune) []byte {
	return append(out, 0xE0|byte(u>>12), 0x80|byte(u>>6)&0x3F, 0x80|byte(u)&0x3F)
}

// isSurrogateAt: s[i:] starts with the three-byte encoding of a surrogate (ED A0..BF 80..BF).
func isSurrogateAt(s string, i int) bool {
	return i+2 < len(s) && s[i] == 0xED && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2] >= 0x80 && s[i+2] <= 0xBF
}

// Why PostgreSQL cannot store a payload string: the TypeScript core's reason (NUL or a lone
// surrogate), or bytes that are not UTF-8 (only a Go string can hold those).
const (
	storableString = iota
	nulOrSurrogate
	notUTF8
)

func stringProblem(s string) int {
	if strings.IndexByte(s, 0) >= 0 {
		return nulOrSurrogate
	}
	if utf8.ValidString(s) {
		return storableString
	}
	for i := 0; i < len(s); i++ {
		if isSurrogateAt(s, i) {
			return nulOrSurrogate
		}
	}
	return notUTF8
}

// jsPathKey writes a key that is not UTF-8 as a path shows it: each lone surrogate as the escape
// JSON.stringify writes (\udc00, as in the TypeScript core's paths), another byte that is not UTF-8
// as U+FFFD, the rest as jsString writes it.
func jsPathKey(b *strings.Builder, k string) {
	b.WriteByte('"')
	for k != "" {
		n := 0
		for n < len(k) {
			r, size := utf8.DecodeRuneInString(k[n:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			n += size
		}
		jsStringBody(b, k[:n])
		k = k[n:]
		switch {
		case k == "":
		case isSurrogateAt(k, 0):
			fmt.Fprintf(b, `\u%04x`, rune(k[0]&0x0F)<<12|rune(k[1]&0x3F)<<6|rune(k[2]&0x3F))
			k = k[3:]
		default:
			b.WriteRune(utf8.RuneError)
			k = k[1:]
		}
	}
	b.WriteByte('"')
}
