package redact

import (
	"bytes"
	"unicode/utf8"
)

// Stream hold-back limits.
const (
	// StreamHold is the most a Stream holds back, in bytes: a line longer
	// than this is redacted in pieces (cut at a space where one is near),
	// and an open private key block longer than this is let through,
	// redacted to the end of what is held.
	StreamHold = 64 << 10
	// streamWindow is how much of an over-long line stays held after a
	// forced cut, so a token spanning the cut is seen whole next time.
	streamWindow = 4 << 10
)

// Stream redacts a byte stream (a command's stdout, say) that arrives in
// pieces cut anywhere: it redacts whole lines, holding back a partial
// last line, and holds from a private key's BEGIN line until its END line,
// so a secret split across two pieces is still seen whole. What holds:
// a secret inside one line (or one key block) of at most StreamHold bytes
// is redacted however the stream is cut. What does not: a secret written
// in pieces further apart in time than the caller's Flush (the worker
// flushes after a short idle pause so a prompt without a newline shows),
// and a line longer than StreamHold, which is cut at a space near
// StreamHold bytes with streamWindow bytes carried over.
//
// A Stream is not safe for concurrent use.
type Stream struct {
	r    *Redactor
	held []byte
}

// NewStream returns a Stream redacting with r; when r is Live, each
// piece the Stream lets go is redacted with the rules r applies then.
func (r *Redactor) NewStream() *Stream { return &Stream{r: r} }

// Write takes the next piece p of the stream and returns what is ready,
// redacted; the rest stays held. The result is nil when nothing is ready.
func (s *Stream) Write(p []byte) []byte {
	s.held = append(s.held, p...)
	n := s.ready()
	if n == 0 {
		return nil
	}
	return s.take(n)
}

// Held returns how many bytes are held back.
func (s *Stream) Held() int { return len(s.held) }

// Flush returns everything held, redacted, and holds nothing after.
func (s *Stream) Flush() []byte {
	if len(s.held) == 0 {
		return nil
	}
	return s.take(len(s.held))
}

// take redacts and returns held[:n], keeping the rest held.
func (s *Stream) take(n int) []byte {
	// Binary output is stored as it came, redacted only where it is
	// text (its valid UTF-8 stretches).
	var out []byte
	r := s.r.now() // one rule set for the whole piece
	if validUTF8Prefix(s.held[:n]) {
		out = []byte(r.Redact(string(s.held[:n])))
	} else {
		out = redactBytes(r, s.held[:n])
	}
	rest := copy(s.held, s.held[n:])
	s.held = s.held[:rest]
	return out
}

// ready returns how many held bytes can go now.
func (s *Stream) ready() int {
	h := s.held
	n := bytes.LastIndexByte(h, '\n') + 1
	// Hold from an unterminated private key block's BEGIN line.
	if b := openKeyBlock(h[:n]); b >= 0 {
		n = b
	}
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

// openKeyBlock returns the offset of the start of the line of the last
// private key BEGIN marker in b that has no END marker after it, or -1.
func openKeyBlock(b []byte) int {
	i := bytes.LastIndex(b, []byte("-----BEGIN "))
	if i < 0 {
		return -1
	}
	line := b[i:]
	if e := bytes.IndexByte(line, '\n'); e >= 0 {
		line = line[:e]
	}
	if !bytes.Contains(line, []byte("PRIVATE KEY")) {
		return -1
	}
	if bytes.Contains(b[i:], []byte("-----END ")) {
		return -1
	}
	return bytes.LastIndexByte(b[:i], '\n') + 1
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
