package ingest

import (
	"errors"
	"fmt"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
)

// Entry is one spooled hook payload (hookspool.Entry): the durable spool
// every agent's hooks pass through before they reach the log.
type Entry = hookspool.Entry

// Errors a read or a parse wraps; test with errors.Is. The JSON ones are
// the hook spool's own values (hookspool), so errors.Is matches a
// transcript line's error and a hook payload's alike.
var (
	// ErrLineTooLong reports a transcript line longer than MaxLineBytes.
	ErrLineTooLong = errors.New("line too long")
	// ErrSecretID reports an id that a redaction rule matches. An id
	// names things on the log for good (an aggregate, a tool call, a
	// line's link), so it is neither stored as it is nor rewritten (a
	// rewritten id is no longer valid, or names another's entry): the
	// input is refused.
	ErrSecretID = errors.New("looks like a secret to a redaction rule, and an id is never redacted: send ids that hold none, or narrow the rule")
	// ErrUUIDConflict reports a transcript line whose uuid (its identity
	// in the session, session.LineID) is an earlier line's, from this
	// file or another the session imported, while its bytes are not that
	// line's: it is neither a copy of that line nor a line of its own.
	ErrUUIDConflict = errors.New("reuses an earlier line's uuid with other content")
	// ErrSyntax is hookspool.ErrSyntax: input that is not well-formed JSON.
	ErrSyntax = hookspool.ErrSyntax
	// ErrInvalidUTF8 is hookspool.ErrInvalidUTF8: input that is not
	// valid UTF-8.
	ErrInvalidUTF8 = hookspool.ErrInvalidUTF8
	// ErrNotObject is hookspool.ErrNotObject: well-formed JSON that is
	// not an object.
	ErrNotObject = hookspool.ErrNotObject
	// ErrDuplicateKey is hookspool.ErrDuplicateKey: a member named twice
	// in one object.
	ErrDuplicateKey = hookspool.ErrDuplicateKey
	// ErrMissingField is hookspool.ErrMissingField: a payload without a
	// required field.
	ErrMissingField = hookspool.ErrMissingField
	// ErrFieldType is hookspool.ErrFieldType: a payload field of the
	// wrong JSON type.
	ErrFieldType = hookspool.ErrFieldType
)

// LineError reports a transcript line that could not be parsed, or read.
// It wraps ErrSyntax, ErrInvalidUTF8, ErrNotObject, ErrLineTooLong,
// ErrSecretID or ErrUUIDConflict.
type LineError struct {
	Path string // transcript path as given
	Line int    // 1-based line number
	Col  int    // 1-based byte column where the problem was found; 0 if unknown
	Err  error
}

// Error returns "path:line: what" or "path:line:col: what".
func (e *LineError) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %v", e.Path, e.Line, e.Col, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
}

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }
