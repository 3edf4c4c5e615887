// Package redact masks secrets (bearer tokens, passwords, custom header
// values from a data source's secureJsonData) in text that reaches a viewer
// or a log: health messages, query errors, notices, frames' labels and
// string values, resource answers. A secret travels in many spellings
// besides its own, and a server or page echoing a request can return any of
// them, so a Masker looks for each secret's derived forms too:
//
//   - the secret as is, and the basic-auth credential `user:password`;
//   - base64 (standard and URL alphabets, padded or not) of the secret and of
//     `user:password` (what follows `Basic ` in an Authorization header), and
//     the part of the base64 of any text holding the secret that depends on the
//     secret alone, at each of base64's three byte alignments (so the base64 of
//     a whole `Bearer <token>` or `Authorization: Bearer <token>` header, or of
//     a JSON document quoting it, is masked too);
//   - hex (lower- and upper-case) of the secret;
//   - JSON string escaping, with and without HTML escaping (`&`, `<`, `>` as
//     `\u0026`, `\u003c`, `\u003e`, as Go's encoding/json writes them);
//   - Go quoting (strconv.Quote, what %q and url.Error print);
//   - URL escaping (query, path and full escaping, upper- and lower-case hex);
//   - any prefix of one of these forms at least PrefixLen bytes long (or the
//     whole form when shorter), so a message cut short by a length cap still
//     loses the part of the secret that survived.
//
// Masking must come before truncation: Mask first, then cap the length
// (Truncate does both in that order).
package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Mask is what replaces a secret.
const Mask = "***"

// MinSecretLen is the shortest secret that is masked: shorter values would
// mask ordinary words and digits (and identify nothing).
const MinSecretLen = 4

// PrefixLen is the shortest prefix of a secret's form that is masked where
// the whole form does not appear: 8 bytes of a token identify it (48 bits of
// a random base64 token), and a length cap that leaves 8 or more bytes of a
// secret leaves too much.
const PrefixLen = 8

// Credential is a basic-auth user and password: its `user:password` form and
// that form's base64 are masked besides the password itself.
type Credential struct{ User, Password string }

// form is one spelling of a secret and how long a prefix of it is masked.
type form struct {
	text   string
	prefix int
}

// Masker masks a fixed set of secrets. The zero value masks nothing; a
// Masker is safe for concurrent use.
type Masker struct {
	forms []form
	// firsts maps the first byte of every form to the forms starting with it.
	firsts map[byte][]int
}

// New returns a Masker for the secrets (values shorter than MinSecretLen
// are ignored) and basic-auth credentials (the password alone is masked like
// a secret; `user:password` and its base64 too).
func New(secrets []string, creds ...Credential) *Masker {
	m := &Masker{firsts: map[byte][]int{}}
	seen := map[string]bool{}
	add := func(text string, prefix int) {
		if len(text) < MinSecretLen || seen[text] {
			return
		}
		seen[text] = true
		m.forms = append(m.forms, form{text: text, prefix: min(prefix, len(text))})
	}
	addAll := func(s string, prefix int) {
		for _, f := range spellings(s) {
			add(f, prefix)
		}
	}
	encodings := func(s string) {
		for _, b := range base64s(s) {
			add(b, PrefixLen)
		}
		for _, b := range base64Within(s) {
			add(b, PrefixLen)
		}
		add(hex.EncodeToString([]byte(s)), 2*PrefixLen)
		add(strings.ToUpper(hex.EncodeToString([]byte(s))), 2*PrefixLen)
	}
	for _, s := range secrets {
		if len(s) >= MinSecretLen {
			addAll(s, PrefixLen)
			encodings(s)
		}
	}
	for _, c := range creds {
		if len(c.Password) < MinSecretLen {
			continue
		}
		addAll(c.Password, PrefixLen)
		encodings(c.Password)
		up := c.User + ":" + c.Password
		// A prefix of `user:` alone identifies nothing secret: the prefix
		// masked starts within the password.
		addAll(up, len(c.User)+1+min(PrefixLen, len(c.Password)))
		for _, b := range base64s(up) {
			// Base64 of the user part and a few password bytes: 4 characters
			// per 3 bytes, rounded up.
			add(b, (len(c.User)+1+min(PrefixLen, len(c.Password))+2)/3*4)
		}
	}
	// Longest first, so a form containing another is masked whole.
	sort.SliceStable(m.forms, func(a, b int) bool { return len(m.forms[a].text) > len(m.forms[b].text) })
	for k, f := range m.forms {
		m.firsts[f.text[0]] = append(m.firsts[f.text[0]], k)
	}
	return m
}

// spellings are the textual forms of s: itself, JSON-escaped (with and
// without HTML escaping), Go-quoted, and URL-escaped (query and path, upper-
// and lower-case hex).
func spellings(s string) []string {
	out := []string{s}
	if b, err := json.Marshal(s); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) == nil {
		t := strings.TrimSpace(sb.String())
		out = append(out, t[1:len(t)-1])
	}
	q := strconv.Quote(s)
	out = append(out, q[1:len(q)-1])
	for _, e := range []string{url.QueryEscape(s), url.PathEscape(s), escapeAll(s)} {
		out = append(out, e, lowerHex(e))
	}
	return out
}

// escapeAll percent-encodes every byte but RFC 3986's unreserved ones
// (letters, digits, - . _ ~), as JavaScript's encodeURIComponent and
// Python's quote(safe="") nearly do.
func escapeAll(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// base64s are s in base64, standard and URL alphabets, padded and raw.
func base64s(s string) []string {
	b := []byte(s)
	return []string{
		base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
		base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
	}
}

// base64Within are the characters of the base64 of any text holding s that
// depend on s alone: s preceded by 0, 1 or 2 bytes (its three alignments),
// encoded in the standard and URL alphabets, less the leading characters
// that hold bits of the bytes before s and the trailing ones that hold bits
// of the bytes after it. Whatever text surrounds the secret (`Bearer `, a
// header name, a JSON document), one of these appears in its base64.
func base64Within(s string) []string {
	var out []string
	for k := 0; k < 3; k++ {
		b := append(make([]byte, k), s...)
		// Character j holds bits 6j..6j+5; the secret's bits are 8k..8(k+len)-1.
		first := (8*k + 5) / 6
		last := 8 * len(b) / 6 // characters wholly within the secret end here
		if last-first < MinSecretLen {
			continue
		}
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString(b)[first:last])
		}
	}
	return out
}

// lowerHex lower-cases the hex digits of %XX escapes.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lower(b[i+1]), lower(b[i+2])
		}
	}
	return string(b)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// Empty reports whether m masks nothing.
func (m *Masker) Empty() bool { return m == nil || len(m.forms) == 0 }

// String returns s with every form of every secret, and every prefix of a
// form at least as long as the form's prefix length, replaced by Mask.
// A match is extended as far as it agrees with the form, so the longest
// surviving part of a secret goes.
func (m *Masker) String(s string) string {
	if m.Empty() || len(s) < MinSecretLen {
		return s
	}
	var out strings.Builder
	last := 0
	for i := 0; i < len(s); {
		n := m.matchAt(s, i)
		if n == 0 {
			i++
			continue
		}
		if out.Len() == 0 && last == 0 {
			out.Grow(len(s))
		}
		out.WriteString(s[last:i])
		out.WriteString(Mask)
		i += n
		last = i
	}
	if last == 0 {
		return s
	}
	out.WriteString(s[last:])
	return out.String()
}

// matchAt returns the length of the longest masked match starting at s[i],
// 0 when none.
func (m *Masker) matchAt(s string, i int) int {
	best := 0
	for _, k := range m.firsts[s[i]] {
		f := m.forms[k]
		n := 0
		for n < len(f.text) && i+n < len(s) && s[i+n] == f.text[n] {
			n++
		}
		if n >= f.prefix && n > best {
			best = n
		}
	}
	return best
}

// Bytes is String over a byte slice; b is returned unchanged (not copied)
// when nothing was masked.
func (m *Masker) Bytes(b []byte) []byte {
	if m.Empty() {
		return b
	}
	s := string(b)
	if t := m.String(s); t != s {
		return []byte(t)
	}
	return b
}

// Truncate masks s, then caps it at max bytes (on a rune boundary),
// appending "…" when it cut. max ≤ 0 means no cap.
func (m *Masker) Truncate(s string, max int) string {
	s = m.String(s)
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
