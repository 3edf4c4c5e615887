package redact

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every expected encoding below was written by hand (or with Python's
// base64/json/urllib), not produced by this package.

func TestMaskPlain(t *testing.T) {
	m := New([]string{"SUPERSECRETTOKEN123", "abc"})
	assert.Equal(t, "Authorization: Bearer ***.", m.String("Authorization: Bearer SUPERSECRETTOKEN123."))
	assert.Equal(t, "abc stays: too short to mask", m.String("abc stays: too short to mask"))
	assert.Equal(t, "*** and ***", m.String("SUPERSECRETTOKEN123 and SUPERSECRETTOKEN123"))
}

func TestMaskBasicAuth(t *testing.T) {
	m := New(nil, Credential{User: "alice", Password: "pa55w0rd&<more>"})
	// base64("alice:pa55w0rd&<more>") = YWxpY2U6cGE1NXcwcmQmPG1vcmU+ (Python).
	got := m.String(`401: header was "Basic YWxpY2U6cGE1NXcwcmQmPG1vcmU+"`)
	assert.Equal(t, `401: header was "Basic ***"`, got)
	assert.Equal(t, "user ***", m.String("user alice:pa55w0rd&<more>"), "user:password is masked whole")
	assert.Equal(t, "alice is the user", m.String("alice is the user"), "the user alone is not secret")
	// Go's encoding/json escapes & < > as \u0026 \u003c \u003e.
	assert.Equal(t, `{"error":"***"}`, m.String(`{"error":"pa55w0rd\u0026\u003cmore\u003e"}`))
}

func TestMaskJSONEscaped(t *testing.T) {
	m := New([]string{`tok&en<x>-12345`, `quo"te\back-1`})
	assert.Equal(t, `{"h":"***"}`, m.String(`{"h":"tok\u0026en\u003cx\u003e-12345"}`))
	assert.Equal(t, `{"h":"***"}`, m.String(`{"h":"tok&en<x>-12345"}`))
	assert.Equal(t, `{"h":"***"}`, m.String(`{"h":"quo\"te\\back-1"}`), "JSON and Go quoting of \" and \\")
}

func TestMaskURLEscaped(t *testing.T) {
	m := New([]string{"p@ss/word+1 z"})
	// urllib.parse.quote('p@ss/word+1 z', safe='') = p%40ss%2Fword%2B1%20z
	assert.Equal(t, "GET /x?t=***&a=1", m.String("GET /x?t=p%40ss%2Fword%2B1%20z&a=1"))
	assert.Equal(t, "GET /x?t=***&a=1", m.String("GET /x?t=p%40ss%2Fword%2B1+z&a=1"), "query escaping: space as +")
	assert.Equal(t, "GET /x?t=***&a=1", m.String("GET /x?t=p%40ss%2fword%2b1%20z&a=1"), "lower-case hex")
}

func TestMaskBase64Alphabets(t *testing.T) {
	m := New([]string{"??>>secret"})
	// Python: b64encode = Pz8+PnNlY3JldA==, urlsafe = Pz8-PnNlY3JldA==
	assert.Equal(t, "a *** b", m.String("a Pz8+PnNlY3JldA== b"))
	assert.Equal(t, "a *** b", m.String("a Pz8-PnNlY3JldA== b"))
	assert.Equal(t, "a *** b", m.String("a Pz8-PnNlY3JldA b"), "raw (unpadded) form")
}

// TestMaskPrefixes: a message cut by a length cap keeps only a prefix of the
// secret; 8 bytes or more of it are masked, fewer are not identifying.
func TestMaskPrefixes(t *testing.T) {
	const secret = "HDRSECRET456abcdefgh" // 20 bytes
	m := New([]string{secret})
	assert.Equal(t, "header: ***…", m.String("header: "+secret[:15]+"…"), "15 of 20 bytes")
	assert.Equal(t, "header: ***…", m.String("header: "+secret[:8]+"…"), "8 of 20 bytes")
	assert.Equal(t, "header: HDRSECR…", m.String("header: "+secret[:7]+"…"), "7 bytes identify nothing")
	assert.Equal(t, "x***y", m.String("x"+secret[:12]+"y"), "a prefix anywhere")
}

// TestTruncateMasksFirst: a cap falling inside a secret leaves none of it.
func TestTruncateMasksFirst(t *testing.T) {
	const secret = "HDRSECRET456abcdefgh"
	m := New([]string{secret})
	msg := strings.Repeat("x", 20) + secret + " tail"
	for max := 20; max <= 45; max++ {
		got := m.Truncate(msg, max)
		assert.NotContains(t, got, "HDRS", "cap %d: %q", max, got)
		assert.LessOrEqual(t, len(got), max+len("…"))
	}
	assert.Equal(t, "xxxxxxxxxxxxxxxxxxxx*** tail", m.Truncate(msg, 0))
	var none *Masker
	assert.Equal(t, "ab…", none.Truncate("abcdef", 2))
	assert.Equal(t, "héllo…", New(nil).Truncate("héllo wörld", 6), "cut on a rune boundary")
}

func TestMaskLongestFirst(t *testing.T) {
	m := New([]string{"abcd1234", "abcd1234xyz!"})
	assert.Equal(t, "[***]", m.String("[abcd1234xyz!]"))
	assert.Equal(t, "[***]", m.String("[abcd1234]"))
}

func TestMaskNothing(t *testing.T) {
	var nilM *Masker
	assert.True(t, nilM.Empty())
	assert.Equal(t, "same", nilM.String("same"))
	m := New([]string{"", "ab"}, Credential{User: "u", Password: "p"})
	assert.True(t, m.Empty())
	b := []byte("unchanged bytes")
	assert.Same(t, &b[0], &m.Bytes(b)[0])
	m2 := New([]string{"s3cr3t-v4lue"})
	b2 := []byte("no secret here")
	assert.Same(t, &b2[0], &m2.Bytes(b2)[0], "not copied when nothing is masked")
	assert.Equal(t, "a *** b", string(m2.Bytes([]byte("a s3cr3t-v4lue b"))))
}

// FuzzMask: whatever the text, no form of the secret survives whole.
func FuzzMask(f *testing.F) {
	f.Add("prefix SUPERSECRET suffix", "SUPERSECRET")
	f.Add("SUPERSUPERSECRET", "SUPERSECRET")
	f.Fuzz(func(t *testing.T, text, secret string) {
		if len(secret) < MinSecretLen || strings.Contains(Mask, secret) {
			return
		}
		m := New([]string{secret})
		got := m.String(text + secret + text)
		if strings.Contains(got, secret) {
			t.Fatalf("%q survives in %q", secret, got)
		}
	})
}

// TestMaskWholeHeaderBase64AndHex: the base64 of the whole `Bearer <token>`
// header value, of the `Authorization: Bearer <token>` line and of a JSON
// document quoting it, and the token's hex, are masked; the part of the
// base64 that encodes `Bearer ` (or the document's start) may stay, the token's
// part does not. Encodings computed with Python's base64 and binascii
// (checked failing before: all four passed through).
func TestMaskWholeHeaderBase64AndHex(t *testing.T) {
	const token = "SUPERSECRETTOKEN123"
	m := New([]string{token})
	for _, enc := range []string{
		"QmVhcmVyIFNVUEVSU0VDUkVUVE9LRU4xMjM=",                     // b64encode(b"Bearer " + token)
		"QXV0aG9yaXphdGlvbjogQmVhcmVyIFNVUEVSU0VDUkVUVE9LRU4xMjM=", // b64encode(b"Authorization: Bearer " + token)
		"eyJhdXRoIjoiQmVhcmVyIFNVUEVSU0VDUkVUVE9LRU4xMjMifQ==",     // b64encode(b'{"auth":"Bearer ' + token + b'"}')
		"5355504552534543524554544f4b454e313233",                   // hexlify(token)
		"5355504552534543524554544F4B454E313233",                   // the same, upper-case
	} {
		got := m.String("echo: " + enc + " end")
		assert.Contains(t, got, Mask, enc)
		assert.NotContains(t, got, "U0VDUkVUVE9LRU4", enc)  // base64 of SECRETTOKEN at the header's alignment
		assert.NotContains(t, got, "4543524554544", enc)    // hex of ECRET
		assert.NotContains(t, got, "4543524554544f4b", enc) // hex of ECRETTOK
		assert.True(t, strings.HasSuffix(got, " end"), got) // text after the token kept
	}
	assert.Equal(t, "no secret here: 48656c6c6f", m.String("no secret here: 48656c6c6f"), "other hex untouched")
}
