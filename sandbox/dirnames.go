package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"
)

// UnknownType stands, in what DirNames returns, for a name whose type
// the file system did not give (getdents(2)'s DT_UNKNOWN): lstat(2)
// tells it.
const UnknownType = fs.ModeIrregular

// DirNames returns the names in the directory dir, "." and ".." left
// out, with their type bits (fs.FileMode.Type; UnknownType where
// getdents(2) gave DT_UNKNOWN), read by getdents(2) straight: an
// os.File also costs an fcntl(2) and an epoll_ctl(2), as much as the
// read itself for a home. A resolver checking many names in one
// directory reads it once rather than lstat(2)ing each. Errors: open(2)'s
// and getdents(2)'s, and a malformed entry.
func DirNames(dir string) (map[string]fs.FileMode, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	names := make(map[string]fs.FileMode)
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8,
		// name NUL-terminated (getdents64(2)).
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, fmt.Errorf("%s: a directory entry of %d bytes", dir, reclen)
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				names[s] = direntType(b[18])
			}
			b = b[reclen:]
		}
	}
}

// direntType maps a d_type of getdents(2) to fs.FileMode type bits.
func direntType(t byte) fs.FileMode {
	switch t {
	case unix.DT_REG:
		return 0
	case unix.DT_DIR:
		return fs.ModeDir
	case unix.DT_LNK:
		return fs.ModeSymlink
	case unix.DT_FIFO:
		return fs.ModeNamedPipe
	case unix.DT_SOCK:
		return fs.ModeSocket
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.DT_BLK:
		return fs.ModeDevice
	}
	return UnknownType
}
