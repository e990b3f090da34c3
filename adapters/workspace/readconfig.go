package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MaxConfigFile is the most bytes ConfigFile may hold.
const MaxConfigFile = 64 << 10

// readConfigFile returns the bytes of dir's ConfigFile, read through no
// symbolic link (neither .logbook nor the file may be one: a link is
// committed as easily as a file, and would send every check and push to
// wherever it points) and only from a regular file of at most
// MaxConfigFile bytes, opened without blocking (a FIFO there is refused,
// never waited on). A missing file (or a .logbook that is no directory)
// is fs.ErrNotExist; other errors name the file and what it is instead.
func readConfigFile(dir string) ([]byte, error) {
	name := filepath.Join(dir, ConfigFile)
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("workspace config %s: "+format, append([]any{name}, args...)...)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, refuse("project dir: %w", err)
	}
	defer unix.Close(dfd)
	sub, file := filepath.Split(ConfigFile)
	lfd, err := unix.Openat(dfd, filepath.Clean(sub), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, fs.ErrNotExist
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR) && isSymlinkAt(dfd, filepath.Clean(sub)):
		return nil, refuse("%s is a symbolic link: a project's workspace config is read through no link", filepath.Clean(sub))
	case errors.Is(err, unix.ENOTDIR):
		return nil, fs.ErrNotExist // a file named .logbook holds no config
	case err != nil:
		return nil, refuse("%w", err)
	}
	defer unix.Close(lfd)
	fd, err := unix.Openat(lfd, file, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, fs.ErrNotExist
	case errors.Is(err, unix.ELOOP):
		return nil, refuse("a symbolic link: a project's workspace config is read from no link")
	case err != nil:
		return nil, refuse("%w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, refuse("stat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		kind, ok := map[uint32]string{unix.S_IFIFO: "a FIFO", unix.S_IFCHR: "a character device", unix.S_IFBLK: "a block device",
			unix.S_IFSOCK: "a socket", unix.S_IFDIR: "a directory"}[st.Mode&unix.S_IFMT]
		if !ok {
			kind = "a special file"
		}
		return nil, refuse("not a regular file (%s)", kind)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigFile+1))
	if err != nil {
		return nil, refuse("%w", err)
	}
	if len(b) > MaxConfigFile {
		return nil, refuse("over the limit of %d bytes", MaxConfigFile)
	}
	return b, nil
}

// isSymlinkAt reports whether name in the directory dfd is a symbolic link.
func isSymlinkAt(dfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}
