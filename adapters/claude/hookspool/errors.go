package hookspool

import (
	"errors"
	"fmt"
	"strings"
)

// Errors a hook payload's check wraps; test with errors.Is.
var (
	// ErrSyntax reports input that is not well-formed JSON.
	ErrSyntax = errors.New("malformed JSON")
	// ErrInvalidUTF8 reports input that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrNotObject reports well-formed JSON that is not an object.
	ErrNotObject = errors.New("not a JSON object")
	// ErrDuplicateKey reports a payload whose top-level object names one
	// member twice: a reader keeps one value and the raw text holds both,
	// so the payload is refused rather than read either way.
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrMissingField reports a hook payload without a required field.
	ErrMissingField = errors.New("missing field")
	// ErrFieldType reports a hook payload field of the wrong JSON type.
	ErrFieldType = errors.New("wrong JSON type")
	// ErrTooLarge reports a hook payload over MaxHookSend even after
	// cutting its strings.
	ErrTooLarge = errors.New("payload too large")
	// ErrFieldTooLong reports a hook payload field over its cap.
	ErrFieldTooLong = errors.New("field too long")
	// ErrMustCut is PrepareHook's answer, with the payload, when it is
	// over MaxHookSend and no hash was given to cut it with: not an
	// input error, the payload passed every check.
	ErrMustCut = errors.New("payload over the send cap, to be cut by a program that hashes it")
)

// HookError reports a hook payload that could not be used. It wraps
// ErrSyntax, ErrInvalidUTF8, ErrNotObject, ErrDuplicateKey, ErrTooDeep,
// ErrTooManyKeys, ErrTooLarge, ErrMissingField, ErrFieldType, ErrFieldTooLong,
// events.ErrMalformed, or (from adapters/claude's parser, which reports
// its refusals with this type too) claude.ErrSecretID.
type HookError struct {
	Event string // hook_event_name, if it could be read
	Field string // the offending top-level field, if any
	Err   error
}

// Error returns "claude hook [event]: [field "f": ]what".
func (e *HookError) Error() string {
	var b strings.Builder
	b.WriteString("claude hook")
	if e.Event != "" {
		b.WriteString(" " + e.Event)
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the cause.
func (e *HookError) Unwrap() error { return e.Err }
