package hookspool

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
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
// and names path and limit. Other errors are os.Open's and read's,
// naming path.
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, size, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, the limit is %d", path, ErrFileTooLarge, size, limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d bytes, the limit", path, ErrFileTooLarge, limit)
	}
	return b, nil
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
