package redact

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Stream hold-back limits.
const (
	// StreamHold is the most a Stream holds back, in bytes: a line longer
	// than this is redacted in pieces (cut at a space where one is near).
	StreamHold = 64 << 10
	// streamWindow is how much of an over-long line stays held after a
	// forced cut, so a token spanning the cut is seen whole next time.
	streamWindow = 4 << 10
	// keyTail is how many bytes of an open private key block a Stream
	// keeps to find an END marker that arrives cut in two; everything
	// else inside the block is dropped as it arrives.
	keyTail = 256
)

// keyRedacted replaces a private key block in a Stream, as the
// private_key rule replaces it in a text.
const keyRedacted = "[REDACTED:private_key]"

// keyBegin and keyEnd are the private key block markers (PEM, OpenSSH,
// PGP armor) that the private_key rule (Builtin) matches.
var (
	keyBegin = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`) })
	keyEnd   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`) })
)

// Stream redacts a byte stream (a command's stdout, say) that arrives in
// pieces cut anywhere: it redacts whole lines, holding back a partial
// last line, so a secret split across two pieces is still seen whole.
//
// A private key block is handled apart from the rules: from its BEGIN
// marker on, the Stream is inside the block and lets nothing of it go
// (the text before the marker goes, redacted, followed by
// "[REDACTED:private_key]"), however the block is cut and however long
// the pauses between its pieces; what follows the END marker is a
// stream again. A block whose END marker never comes hides the rest of
// the stream. Inside a block at most keyTail bytes are held (to find an
// END marker cut in two); the rest is dropped as it arrives, so a
// stream that never ends holds bounded memory.
//
// What holds: a secret inside one line of at most StreamHold bytes is
// redacted however the stream is cut, and whatever pauses (Flush) come
// between its pieces: a pause lets a partial line go but for its
// token-shaped end, and what went is redacted again with the rest of
// its line; a private key block whatever its pieces. What does not: a
// secret with a blank or punctuation inside it (past the token
// characters) paused at that character and redacted by a rule that
// needs what follows, and one spanning a line longer than StreamHold,
// which is cut at a space near StreamHold bytes with streamWindow bytes
// carried over. The price of the hold: a prompt that ends in a word
// (no space or punctuation after it) shows only when the command writes
// on or ends.
//
// A Stream is not safe for concurrent use.
type Stream struct {
	r    *Redactor
	held []byte
	// prior is the part of the current line a Flush let go (its bytes
	// as they came, at most streamWindow), and priorOut that part as it
	// went, redacted: the rest of the line is redacted with it, so a
	// secret whose keyword went before a pause ("password: ", then the
	// value) is still seen.
	prior, priorOut []byte
	// inKey is true inside a private key block; tail then holds the
	// block's last bytes (at most keyTail plus one piece) and held is
	// empty.
	inKey bool
	tail  []byte
}

// NewStream returns a Stream redacting with r; when r is Live, each
// piece the Stream lets go is redacted with the rules r applies then.
func (r *Redactor) NewStream() *Stream { return &Stream{r: r} }

// Write takes the next piece p of the stream and returns what is ready,
// redacted; the rest stays held. The result is nil when nothing is ready.
func (s *Stream) Write(p []byte) []byte {
	var out []byte
	for len(p) > 0 {
		if s.inKey {
			p = s.skipKey(p)
			continue
		}
		s.held = append(s.held, p...)
		p = nil
		if loc := findBegin(s.held); loc != nil {
			// What follows the marker is the block's: it goes through
			// skipKey, never through the rules.
			p = bytes.Clone(s.held[loc[1]:])
			out = append(out, s.take(loc[0])...)
			out = append(out, keyRedacted...)
			s.held = s.held[:0]
			s.inKey = true
			continue
		}
		if n := s.ready(); n > 0 {
			out = append(out, s.take(n)...)
		}
	}
	return out
}

// findBegin returns the span of the first private key BEGIN marker in
// b, or nil.
func findBegin(b []byte) []int {
	if !bytes.Contains(b, []byte("-----BEGIN")) {
		return nil
	}
	return keyBegin().FindIndex(b)
}

// skipKey drops p, a piece inside a private key block, and returns what
// follows the block's END marker (nil while the block goes on).
func (s *Stream) skipKey(p []byte) []byte {
	s.tail = append(s.tail, p...)
	if loc := findEnd(s.tail); loc != nil {
		rest := bytes.Clone(s.tail[loc[1]:])
		s.tail = s.tail[:0]
		s.inKey = false
		if len(rest) == 0 {
			return nil
		}
		return rest
	}
	if len(s.tail) > keyTail {
		n := copy(s.tail, s.tail[len(s.tail)-keyTail:])
		s.tail = s.tail[:n]
	}
	return nil
}

// findEnd returns the span of the first private key END marker in b, or
// nil.
func findEnd(b []byte) []int {
	if !bytes.Contains(b, []byte("-----END")) {
		return nil
	}
	return keyEnd().FindIndex(b)
}

// Held returns how many bytes are held back that a Flush or Close would
// let go (the inside of a private key block never goes, so it is not
// counted).
func (s *Stream) Held() int { return len(s.held) }

// InKey reports whether the stream is inside a private key block: what
// comes next is dropped until the block's END marker.
func (s *Stream) InKey() bool { return s.inKey }

// Flush returns what is held, redacted, for a pause in the stream (the
// worker's idle flush): a partial last line goes, except a trailing
// piece that could still grow into a private key's BEGIN marker or be
// the start of a token-shaped secret (trailingToken: "ghp_abc", then a
// pause, then the rest), which stays held until the stream goes on or
// closes. Inside a private key block nothing goes, and the block stays
// open: what comes next is dropped until its END marker.
func (s *Stream) Flush() []byte {
	n := len(s.held) - max(partialBegin(s.held), trailingToken(s.held))
	if n <= 0 {
		return nil
	}
	return s.take(n)
}

// trailingToken returns the length of the longest suffix of b made of
// the characters token-shaped secrets are written with (letters,
// digits and _ - + / = . ~: API keys, base64, JWTs), at most
// streamWindow bytes; 0 when that suffix is dots alone (a progress
// line).
func trailingToken(b []byte) int {
	n := 0
	dots := true
	for i := len(b) - 1; i >= 0 && n < streamWindow; i-- {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-+/=.~", c) >= 0) {
			break
		}
		dots = dots && c == '.'
		n++
	}
	if dots {
		return 0
	}
	return n
}

// Close returns everything held, redacted, at the end of the stream: a
// private key block still open is dropped (its BEGIN marker was already
// replaced), never let go. The Stream holds nothing after and starts
// afresh if written again.
func (s *Stream) Close() []byte {
	s.inKey = false
	s.tail = s.tail[:0]
	if len(s.held) == 0 {
		s.prior, s.priorOut = s.prior[:0], s.priorOut[:0]
		return nil
	}
	out := s.take(len(s.held))
	s.prior, s.priorOut = s.prior[:0], s.priorOut[:0]
	return out
}

// partialBegin returns the length of the longest suffix of b that could
// still become a private key's BEGIN marker: a prefix of "-----BEGIN ",
// or "-----BEGIN " followed by what the marker allows, on one line and
// short. 0 when there is none.
func partialBegin(b []byte) int {
	const begin = "-----BEGIN "
	const most = 96
	from := max(0, len(b)-most)
	for i := from; i < len(b); i++ {
		if b[i] != '-' {
			continue
		}
		rest := b[i:]
		if len(rest) <= len(begin) {
			if begin[:len(rest)] == string(rest) {
				return len(rest)
			}
			continue
		}
		if string(rest[:len(begin)]) != begin {
			continue
		}
		ok := true
		for _, c := range rest[len(begin):] {
			if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ' || c == '-') {
				ok = false
				break
			}
		}
		if ok {
			return len(rest)
		}
	}
	return 0
}

// take redacts and returns held[:n], keeping the rest held.
func (s *Stream) take(n int) []byte {
	if n == 0 {
		return nil
	}
	// Binary output is stored as it came, redacted only where it is
	// text (its valid UTF-8 stretches).
	var out []byte
	r := s.r.now() // one rule set for the whole piece
	piece := s.held[:n]
	switch {
	case !validUTF8Prefix(piece):
		out = redactBytes(r, piece)
		s.prior, s.priorOut = s.prior[:0], s.priorOut[:0]
	case len(s.prior) > 0:
		// The line's start went before a pause: redact it with this
		// piece, and let go what differs from what went.
		whole := r.Redact(string(s.prior) + string(piece))
		k := 0
		for k < len(whole) && k < len(s.priorOut) && whole[k] == s.priorOut[k] {
			k++
		}
		out = []byte(whole[k:])
	default:
		out = []byte(r.Redact(string(piece)))
	}
	if nl := bytes.LastIndexByte(piece, '\n'); nl >= 0 {
		// A new line: what went before it no longer matters.
		s.prior = append(s.prior[:0], piece[nl+1:]...)
		s.priorOut = append(s.priorOut[:0], r.Redact(string(piece[nl+1:]))...)
	} else if validUTF8Prefix(piece) {
		s.prior = append(s.prior, piece...)
		s.priorOut = append(s.priorOut, out...)
	}
	if len(s.prior) > streamWindow {
		s.prior = append(s.prior[:0], s.prior[len(s.prior)-streamWindow:]...)
		s.priorOut = append(s.priorOut[:0], r.Redact(string(s.prior))...)
	}
	rest := copy(s.held, s.held[n:])
	s.held = s.held[:rest]
	return out
}

// ready returns how many held bytes can go now: the whole lines, or, when
// more than StreamHold bytes would stay held, all but a window cut near
// its start at a space.
func (s *Stream) ready() int {
	h := s.held
	n := bytes.LastIndexByte(h, '\n') + 1
	if len(h)-n <= StreamHold {
		return n
	}
	// Too much held: cut near StreamHold bytes from the end of what goes,
	// at a space if there is one in the window, keeping a window held.
	cut := len(h) - streamWindow
	if sp := bytes.LastIndexAny(h[:cut], " \t\r\n"); sp >= 0 && sp >= cut-streamWindow {
		cut = sp + 1
	}
	return cut
}

// validUTF8Prefix reports whether b is valid UTF-8.
func validUTF8Prefix(b []byte) bool { return utf8.Valid(b) }

// redactBytes redacts the text runs of b (its valid UTF-8 stretches) and
// keeps every other byte as it is.
func redactBytes(r *Redactor, b []byte) []byte {
	out := make([]byte, 0, len(b))
	start := 0
	for i := 0; i < len(b); {
		c, n := utf8.DecodeRune(b[i:])
		if c == utf8.RuneError && n <= 1 {
			out = append(out, r.Redact(string(b[start:i]))...)
			out = append(out, b[i])
			i++
			start = i
			continue
		}
		i += n
	}
	return append(out, r.Redact(string(b[start:]))...)
}
