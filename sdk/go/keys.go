package workhorse

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
)

// KeyIdentity is what the client computes for a scoped key; the raw key itself is never kept.
type KeyIdentity struct {
	Scope      string
	KeyHash    []byte // HMAC-SHA256(installation secret, UTF-8(scope) 0x1F UTF-8(key))
	KeyDigest  string // first 12 hex characters of KeyHash
	KeyPreview string // first min(8, floor(n/3)) code points, then "…"
	KeyLength  int    // code points
	// LegacyKeyHash is the pre-HMAC SHA-256 hash, set only while bindings made before the upgrade may be live.
	LegacyKeyHash []byte
}

// KeyHash is HMAC-SHA256(secret, UTF-8(scope) ‖ 0x1F ‖ UTF-8(key)).
func KeyHash(secret []byte, scope, key string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(scope))
	m.Write([]byte{0x1f})
	m.Write([]byte(key))
	return m.Sum(nil)
}

// LegacyKeyHash is the hash before the installation secret existed: SHA-256(UTF-8(scope) ‖ 0x1F ‖ UTF-8(key)).
func LegacyKeyHash(scope, key string) []byte {
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0x1f})
	h.Write([]byte(key))
	return h.Sum(nil)
}

// KeyDigestOf is the first 12 hex characters of a key hash: what operators correlate on.
func KeyDigestOf(hash []byte) string { return hex.EncodeToString(hash[:6]) }

// KeyLengthOf is the key's length in Unicode code points.
func KeyLengthOf(key string) int { return utf8Chars(key) }

// KeyPreviewOf is the bounded, redacted preview: the first min(8, floor(n/3)) code points, then
// "…"; keys under 3 code points preview as "…". Control and format characters in the shown part
// (General_Category Cc and Cf by the table every client shares, sdk/conformance/key-preview-hidden.json,
// whatever Unicode version Go's unicode package has) become U+FFFD. The tail of a key is never shown.
func KeyPreviewOf(key string) string {
	runes := []rune(key)
	shown := len(runes) / 3
	if shown > 8 {
		shown = 8
	}
	var b strings.Builder
	for _, r := range runes[:shown] {
		if unicode.Is(keyPreviewHidden, r) {
			r = '\uFFFD'
		}
		b.WriteRune(r)
	}
	b.WriteString("…")
	return b.String()
}

func identify(secret []byte, legacy bool, scope, key string) KeyIdentity {
	h := KeyHash(secret, scope, key)
	id := KeyIdentity{Scope: scope, KeyHash: h, KeyDigest: KeyDigestOf(h), KeyPreview: KeyPreviewOf(key), KeyLength: KeyLengthOf(key)}
	if legacy {
		id.LegacyKeyHash = LegacyKeyHash(scope, key)
	}
	return id
}
