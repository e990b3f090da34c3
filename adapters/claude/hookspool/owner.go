package hookspool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotOwner marks a data dir that belongs to another user than the
// process's effective uid: nothing is created or written in it, since
// files the process left there (root's, say) would be ones its owner's
// logbook cannot remove.
var ErrNotOwner = errors.New("belongs to another user")

// OwnerFix is what to do about a data dir of another user's.
const OwnerFix = "run as its owner, or use a data dir of your own (--data)"

// OwnerError returns an error wrapping ErrNotOwner, naming dir, its owner
// uid and the process's effective uid, and OwnerFix, when st (dir's own
// stat) says dir belongs to a uid other than the effective one; nil when
// it is the process's own, or st carries no owner.
func OwnerError(dir string, st fs.FileInfo) error {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return &ownerError{dir: dir, uid: sys.Uid}
	}
	return nil
}

// CheckOwner applies OwnerError to the data dir dir with one stat: nil
// when dir does not exist (its creator makes it, 0700, and owns it) or is
// the process's own. Other stat errors are returned, naming dir.
func CheckOwner(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	return OwnerError(dir, st)
}

// ownerError is OwnerError's error.
type ownerError struct {
	dir string
	uid uint32
}

func (e *ownerError) Error() string {
	return fmt.Sprintf("data dir %s belongs to uid %d, not you (uid %d): %s", e.dir, e.uid, os.Geteuid(), OwnerFix)
}

func (e *ownerError) Unwrap() error { return ErrNotOwner }
