package projections

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

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
// on-disk corruption, and as a *DiskError when it is a fatal error
// Pebble met writing to the disk under dir (no space left, a read-only
// file system, an I/O error); any other value it panics with again.
func recovered(dir string, r any) error {
	e, ok := r.(error)
	if !ok {
		panic(r)
	}
	if fe, ok := errors.AsType[*fatalError](e); ok && diskFault(fe) {
		return &DiskError{Dir: dir, Err: fe}
	}
	if !pebble.IsCorruptionError(e) {
		panic(r)
	}
	return corruption(dir, e)
}

// diskFault reports whether err is the disk's refusal of a write: no
// space left, a quota, a read-only file system, an I/O error.
func diskFault(err error) bool {
	for _, no := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO} {
		if errors.Is(err, no) {
			return true
		}
	}
	return false
}

// DiskError reports a write of the store the disk under it refused
// (Pebble treats it as fatal: the store it was writing is unusable and
// must be opened again once the disk takes writes). It wraps Pebble's
// report, and through it the system's error (syscall.ENOSPC, …).
type DiskError struct {
	Dir string // the store's directory
	Err error  // Pebble's report
}

// Error names the directory, Pebble's report and the fix, e.g.
// `projections in /d/views could not be written: pebble: MANIFEST flush
// failed: write /d/views/MANIFEST-000001: no space left on device (free
// space there and run the command again)`.
func (e *DiskError) Error() string {
	fix := "free space there and run the command again"
	switch {
	case errors.Is(e.Err, syscall.EROFS):
		fix = "remount it read-write and run the command again"
	case errors.Is(e.Err, syscall.EIO):
		fix = "the disk reports I/O errors: check it, then run the command again"
	}
	return fmt.Sprintf("projections in %s could not be written: %v (%s)", e.Dir, e.Err, fix)
}

// Unwrap returns Pebble's report.
func (e *DiskError) Unwrap() error { return e.Err }

// noCorruptionPanic is the store's Pebble event listener: Pebble reports
// corruption to DataCorruption and then returns it as an error, but its
// default listener has the logger end the process (Fatalf) first.
func noCorruptionPanic() *pebble.EventListener {
	return &pebble.EventListener{DataCorruption: func(pebble.DataCorruptionInfo) {}}
}
