package datadir

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrViewsHeld reports a data dir whose lock was free although another
// process holds its projections' store (views/, Pebble's LOCK): the lock
// file was removed while that process ran. Errors wrapping it also wrap
// ErrBusy.
var ErrViewsHeld = errors.New("its projections are held by another process")

// ViewsHolder returns the pid of another process that holds the
// projections' store lock (views/LOCK, a POSIX record lock Pebble takes
// while the store is open), as /proc/locks lists it, and true; 0 and
// false when none does, the file is absent, or /proc/locks cannot be
// read. It opens neither the store nor its LOCK file: closing one would
// let go of a lock this process holds on it.
func (d Dir) ViewsHolder() (int, bool) {
	st, err := os.Stat(d.Path("views", "LOCK"))
	if err != nil {
		return 0, false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	dev := fmt.Sprintf("%02x:%02x:%d", unix.Major(sys.Dev), unix.Minor(sys.Dev), sys.Ino)
	self := os.Getpid()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: POSIX  ADVISORY  WRITE 4242 fe:00:10805662 0 EOF"; a
		// waiter's line has "->" after the number.
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "POSIX" || fields[5] != dev {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && pid > 0 && pid != self {
			return pid, true
		}
	}
	return 0, false
}

// HolderName names process pid for an error: "logbook serve pid N" when
// serve.json names it, else "pid N".
func (d Dir) HolderName(pid int) string {
	if si, ok := d.ReadServeInfo(); ok && si.PID == pid {
		return fmt.Sprintf("logbook serve pid %d", pid)
	}
	return fmt.Sprintf("pid %d", pid)
}

// viewsHeldError is TryLock's error when it took the lock of a data dir
// whose projections process pid holds: it wraps ErrBusy and
// ErrViewsHeld, names the holder and gives no removal advice.
func (d Dir) viewsHeldError(pid int) error {
	return &viewsHeld{fmt.Sprintf("%v: %s is held by %s, which has its projections (%s) open, though the lock file %s does not say so: it was removed while that process ran; stop it before starting another (its next start writes the lock file again)",
		ErrBusy, d, d.HolderName(pid), d.Path("views"), d.Path("lock"))}
}

// viewsHeld is viewsHeldError's error.
type viewsHeld struct{ msg string }

func (e *viewsHeld) Error() string { return e.msg }

// Is reports ErrBusy and ErrViewsHeld.
func (e *viewsHeld) Is(target error) bool { return target == ErrBusy || target == ErrViewsHeld }
