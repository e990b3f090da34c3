package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
)

// sniffBytes is how much of a first line that has no newline yet
// FirstRecord reads to judge it.
const sniffBytes = 64 << 10

// FirstRecord is what the first line of a file that is not blank shows of
// it, for an importer to judge whether the file is a transcript of its
// agent before reading it into the log.
type FirstRecord struct {
	// Line is that line's number (1-based); 0 when the file holds no
	// line that is not blank (empty, or blank lines only).
	Line int
	// Object reports that the line is, or begins as, a JSON object.
	Object bool
	// Keys are the object's top-level keys read before the line ended or
	// stopped parsing, in order (a torn or damaged line gives those
	// before the damage).
	Keys []string
	// Whole reports that the object was read to its end: a line whose
	// keys lack one an agent's records all have is not that agent's. A
	// torn or damaged line may lack it only because it stops early.
	Whole bool
	// Bytes is the line, trimmed of blanks, when Whole.
	Bytes []byte
	// Torn reports that the line has no newline yet (it is judged on
	// what is there).
	Torn bool
	// Head is the line's start, at most 40 bytes, as read: never for a
	// message (see Begins).
	Head string
}

// Has reports whether key is among r's Keys.
func (r FirstRecord) Has(key string) bool {
	for _, k := range r.Keys {
		if k == key {
			return true
		}
	}
	return false
}

// NotObject returns the reason a file whose FirstRecord is r is not a
// JSON Lines file of objects ("its first line is not a JSON object: …"),
// or "" when it is one or holds nothing yet.
func (r FirstRecord) NotObject() string {
	if r.Line == 0 || r.Object {
		return ""
	}
	if !utf8.ValidString(r.Head) || bytes.ContainsFunc([]byte(r.Head), func(c rune) bool { return c < ' ' && c != '\t' }) {
		return "its first line is not a JSON object (binary data)"
	}
	return "its first line is not a JSON object (" + r.Begins() + ")"
}

// Begins says how r's line begins without quoting it: `it begins "{"`
// for ASCII punctuation, "it begins with a letter" (a digit, a space) for
// the rest. A refused file's text is never shown: it may be a token, a
// password file or anything a link points at, and the message goes to
// terminals and serve's log unredacted.
func (r FirstRecord) Begins() string {
	c, _ := utf8.DecodeRuneInString(r.Head)
	switch {
	case r.Head == "":
		return "it is empty"
	case c < utf8.RuneSelf && unicode.IsPunct(c) || c < utf8.RuneSelf && unicode.IsSymbol(c):
		return "it begins " + strconv.Quote(string(c))
	case unicode.IsLetter(c):
		return "it begins with a letter"
	case unicode.IsDigit(c):
		return "it begins with a digit"
	}
	return "it begins with " + strconv.QuoteRuneToASCII(c)
}

// ReadFirstRecord reads the first line of the file at path that is not
// blank, as FirstLine reads (no more than MaxLineBytes of lines and a
// torn last line's first 64 KiB), and returns what it shows (FirstRecord).
// A line longer than MaxLineBytes gives a *LineError wrapping
// ErrLineTooLong; open and read errors are ReadLines'.
func ReadFirstRecord(path string) (FirstRecord, error) {
	var r FirstRecord
	for l, err := range readLines(context.Background(), path, Cursor{}, 0, MaxLineBytes, MaxLineBytes+2) {
		if err != nil {
			return r, err
		}
		b := l.Bytes
		if l.Torn {
			if l.Size >= MaxLineBytes+2 {
				return FirstRecord{}, &LineError{Path: path, Line: l.N, Err: fmt.Errorf("%w: over %d bytes, the limit is %d", ErrLineTooLong, MaxLineBytes, MaxLineBytes)}
			}
			if b, err = readAt(path, l.Offset, min(l.Size, sniffBytes)); err != nil {
				return r, err
			}
		}
		t := bytes.TrimSpace(b)
		if len(t) == 0 {
			if l.Torn {
				break
			}
			continue
		}
		r.Line, r.Torn = l.N, l.Torn
		r.Head = string(t[:min(len(t), 40)])
		r.Object, r.Keys, r.Whole = topKeys(t)
		r.Whole = r.Whole && !l.Torn && json.Valid(t)
		if r.Whole {
			r.Bytes = t
		}
		return r, nil
	}
	return FirstRecord{}, nil
}

// readAt reads n bytes of the file at path from off.
func readAt(path string, off int64, n int) ([]byte, error) {
	f, _, err := hookspool.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:m], nil
}

// topKeys reports whether b is, or begins as, a JSON object, its
// top-level keys read before it ends or stops parsing, and whether it
// was read to its closing brace.
func topKeys(b []byte) (object bool, keys []string, whole bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return false, nil, false
	}
	for {
		t, err := d.Token()
		if err != nil {
			return true, keys, false
		}
		k, ok := t.(string)
		if !ok {
			return true, keys, true // "}": the object ended
		}
		keys = append(keys, k)
		if err := skipValue(d); err != nil {
			return true, keys, false
		}
	}
}

// skipValue reads one JSON value from d, however deep.
func skipValue(d *json.Decoder) error {
	depth := 0
	for {
		t, err := d.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
