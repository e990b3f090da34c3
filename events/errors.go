package events

import "errors"

// Engine errors. Adapters map backend codes onto these, keeping the cause
// (fmt.Errorf("%w: %w", ErrConflict, err)); callers test with errors.Is.
var (
	// ErrConflict reports that an aggregate moved since it was read: the
	// append's expected sequence was not the aggregate's last. Reload,
	// decide again and retry.
	ErrConflict = errors.New("events: aggregate moved since it was read")
	// ErrUnknownType reports an event type the registry does not know.
	ErrUnknownType = errors.New("events: unknown event type")
	// ErrUnknownVersion reports a schema version of a known type that the
	// registry can neither decode nor upcast.
	ErrUnknownVersion = errors.New("events: unknown schema version")
	// ErrMissingCause reports a transition, verdict or abandonment mark
	// whose cause is absent or lost a required part.
	ErrMissingCause = errors.New("events: cause missing or incomplete")
	// ErrMalformed reports an envelope or payload that is not valid JSON of
	// the expected shape, or that breaks an envelope invariant.
	ErrMalformed = errors.New("events: malformed event")
	// ErrRejected reports a command a reducer refused in the current state.
	ErrRejected = errors.New("events: command rejected")
	// ErrNotFound reports an aggregate, event or row that does not exist.
	ErrNotFound = errors.New("events: not found")
)
