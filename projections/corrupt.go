package projections

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// ErrCorrupt marks a projection whose files Pebble found damaged on disk
// (a block whose checksum does not match, a table or log cut short). The
// store cannot answer from them; the projection is only a cache of the
// log, so removing its directory and projecting again rebuilds it.
var ErrCorrupt = errors.New("projections: on-disk corruption")

// CorruptError reports on-disk corruption Pebble found in a store's
// files, whether Pebble returned it as an error or raised it as a panic
// (some of its read paths do). It wraps ErrCorrupt and Pebble's error.
type CorruptError struct {
	Dir  string // the store's directory
	File string // the damaged file, when Pebble names it; else ""
	Err  error  // Pebble's report
}

// Error names the file (or the directory), what Pebble found, and the
// fix, e.g. `projection in /d/views is corrupt: /d/views/000005.sst:
// pebble: file 000005: block 0/1314: crc32c checksum mismatch … (remove
// /d/views to rebuild it from the log)`.
func (e *CorruptError) Error() string {
	what := firstLine(e.Err)
	if e.File != "" {
		what = e.File + ": " + what
	}
	return fmt.Sprintf("projection in %s is corrupt: %s (remove %s to rebuild it from the log)", e.Dir, what, e.Dir)
}

// Unwrap returns ErrCorrupt and Pebble's error.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// firstLine is err's message up to its first line break: Pebble joins a
// corruption report with a carrier of its details, one per line.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// corruption returns err as a *CorruptError of the store in dir when it
// is Pebble's report of on-disk corruption (and not one already), else
// err unchanged.
func corruption(dir string, err error) error {
	var ce *CorruptError
	if err == nil || errors.As(err, &ce) || !pebble.IsCorruptionError(err) {
		return err
	}
	ce = &CorruptError{Dir: dir, Err: err}
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil {
		ce.File = info.Path
		if info.Details != nil {
			ce.Err = info.Details
		}
	}
	return ce
}

// guard is deferred by each function of the store that calls into
// Pebble, with that function's error result: it turns Pebble's report of
// on-disk corruption in dir, returned or raised as a panic whose value is
// such an error, into a *CorruptError in *errp. Any other panic goes on:
// it is a bug, not damage.
func guard(dir string, errp *error) {
	if r := recover(); r != nil {
		*errp = recovered(dir, r)
		return
	}
	*errp = corruption(dir, *errp)
}

// recovered returns r, a value recovered from a panic, as a
// *CorruptError of the store in dir when it is Pebble's report of
// on-disk corruption; any other value it panics with again.
func recovered(dir string, r any) error {
	e, ok := r.(error)
	if !ok || !pebble.IsCorruptionError(e) {
		panic(r)
	}
	return corruption(dir, e)
}

// noCorruptionPanic is the store's Pebble event listener: Pebble reports
// corruption to DataCorruption and then returns it as an error, but its
// default listener has the logger end the process (Fatalf) first.
func noCorruptionPanic() *pebble.EventListener {
	return &pebble.EventListener{DataCorruption: func(pebble.DataCorruptionInfo) {}}
}
