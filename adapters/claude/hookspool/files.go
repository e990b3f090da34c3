package hookspool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotRegular marks a transcript path that names no regular file: a
// FIFO (opening it for reading blocks until a writer comes), a device
// such as /dev/zero (it never ends), a socket or a directory, directly or
// through a symlink. Such a file is never opened for reading.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens the file at path (symlinks followed) for reading,
// only if it is a regular file, and returns it with its size in bytes at
// that moment; the caller closes it. It never blocks on a FIFO and never
// reads from a device: it stats path first, opens with O_NONBLOCK and
// O_NOCTTY, and checks the opened file again with fstat, so a FIFO or
// device swapped in between is refused too. Errors name path; one for a
// file that is not regular wraps ErrNotRegular and says what it is.
func OpenRegular(path string) (*os.File, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, NotRegular(path, st.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, 0, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, NotRegular(path, st.Mode())
	}
	return f, st.Size(), nil
}

// MaxRulesFile is the most bytes a data dir's redact.txt may hold: 1 MiB,
// thousands of rules. It is read with ReadRegular, so a FIFO or a device
// put in its place is refused rather than read without end.
const MaxRulesFile = 1 << 20

// ErrFileTooLarge marks a file ReadRegular refused for holding more than its
// limit of bytes.
var ErrFileTooLarge = errors.New("too large")

// ReadRegular returns the contents of the small regular file at path
// (symlinks followed), opened as OpenRegular opens it: a FIFO, a device,
// a socket or a directory is refused (the error wraps ErrNotRegular)
// without blocking or reading. It reads at most limit bytes (limit > 0):
// a file holding more is refused with an error that wraps ErrFileTooLarge
// and names path and limit. Other errors are *fs.PathError from stat,
// open and read, naming path.
//
// It calls the system directly (stat, open, fstat, read, close) rather
// than through os.File, so a short-lived process that reads a file or
// two never starts the runtime's network poller for them.
func ReadRegular(path string, limit int64) ([]byte, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Stat(path, &st) }); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, NotRegular(path, typeMode(st.Mode))
	}
	fd, err := openFile(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if err := retryEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, NotRegular(path, typeMode(st.Mode))
	}
	if st.Size > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, the limit is %d", path, ErrFileTooLarge, st.Size, limit)
	}
	// Files under /proc say size 0 and hold more: the buffer grows.
	b, err := readFD(fd, path, min(max(st.Size, 511), limit)+1, limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d bytes, the limit", path, ErrFileTooLarge, limit)
	}
	return b, nil
}

// openFile opens path with flags (O_CLOEXEC among them), retrying on
// EINTR; its error is an *fs.PathError naming path.
func openFile(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// readFD reads fd, the open file at path, to its end or until it has
// read max bytes, into a buffer of first bytes to begin with; its error
// is an *fs.PathError naming path.
func readFD(fd int, path string, first, max int64) ([]byte, error) {
	b := make([]byte, 0, first)
	for int64(len(b)) < max {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(int64(cap(b)), max-int64(len(b)))))
		}
		n, err := unix.Read(fd, b[len(b):min(int64(cap(b)), max)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
	}
	return b, nil
}

// retryEINTR calls f until it returns anything but EINTR.
func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// typeMode returns the fs.FileMode type bits of a stat(2) st_mode m.
func typeMode(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFREG:
		return 0
	}
	return fs.ModeIrregular
}

// NotRegular returns the error for path, found to have mode m: it wraps
// ErrNotRegular and says what the file is (FileKind: a FIFO, a
// directory, …).
func NotRegular(path string, m fs.FileMode) error {
	return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, FileKind(m))
}

// FileKind names the type of a file of mode m, with its article: "a
// regular file", "a symbolic link", "a directory", "a FIFO", "a
// character device", "a block device", "a socket", else "a special file".
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}
