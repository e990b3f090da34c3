package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// Placeholders. A WorkspaceWrite command keeps the protected names missing
// from the workspace's top level missing by mounting an empty read-only
// directory (or file) over each, inside its boundary. A mount needs a
// mount point, and the workspace is the host's own directory, shared live
// with it, so the mount point, the placeholder, is on the host: an empty
// directory or file of mode 0000. Removing it while another command has
// its mount there would detach that mount (the kernel does so for a mount
// point removed from another mount namespace) and let that command create
// the name. So every command that relies on placeholders, in any process
// of any worker on the host, holds a shared flock(2) on the workspace
// directory from before it decides which names are missing until its
// boundary is gone; a placeholder is removed only by whoever gets the
// lock exclusively, that is by the last such command. A worker that dies
// drops its lock with its descriptors; what it left is removed after the
// next command there.

// claimWait bounds the wait for the workspace's lock: another command's
// cleanup holds it exclusively for a few system calls.
const claimWait = 10 * time.Second

// isPlaceholder reports whether fi describes a placeholder: an empty
// regular file, or a directory, of mode 0000 (a directory's emptiness is
// checked by rmdir). Neither git nor an agent makes such a file, and a
// restricted command cannot (the top-level protected names are mount
// points inside its boundary).
func isPlaceholder(fi fs.FileInfo) bool {
	if fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
		return false
	}
	return fi.IsDir() || fi.Mode().IsRegular() && fi.Size() == 0
}

// claim takes the workspace's lock, shared, and decides the top-level
// protected names: one that exists is bound read-only (l.protected), one
// that is missing or is a placeholder is kept missing (l.absentDirs,
// l.absentFiles), its placeholder made if need be. Only in WorkspaceWrite;
// release ends it. Its errors wrap ErrRefused.
func (l *layout) claim() error {
	if l.mode != WorkspaceWrite {
		return nil
	}
	f, err := os.Open(l.ws)
	if err != nil {
		return fmt.Errorf("%w: lock workspace %s: %v", ErrRefused, l.ws, err)
	}
	for deadline := time.Now().Add(claimWait); ; time.Sleep(2 * time.Millisecond) {
		err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) || time.Now().After(deadline) {
			f.Close()
			return fmt.Errorf("%w: lock workspace %s: %v", ErrRefused, l.ws, err)
		}
	}
	l.hold = f
	for _, name := range ProtectedNames() {
		p := filepath.Join(l.ws, name)
		if err := l.claimName(p, slices.Contains(absentDirNames(), name)); err != nil {
			l.release()
			return fmt.Errorf("%w: workspace %s: %v: run it in read_only or full_access", ErrRefused, l.ws, err)
		}
	}
	slices.Sort(l.protected)
	return nil
}

// claimName decides top-level protected name p (a directory name if dir).
func (l *layout) claimName(p string, dir bool) error {
	for range 3 {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if dir {
				err = unix.Mkdir(p, 0)
			} else {
				var fd int
				fd, err = unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err == nil {
					unix.Close(fd)
				}
			}
			switch {
			case err == nil || errors.Is(err, unix.EEXIST):
				continue // look again: another command may have made it
			case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS):
				// The worker cannot create it, so its command cannot.
				return nil
			default:
				return fmt.Errorf("make placeholder %s: %w", p, err)
			}
		case err != nil:
			return fmt.Errorf("protected %s: %w", p, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link", p)
		case isPlaceholder(fi) && fi.IsDir() == dir:
			if dir {
				l.absentDirs = append(l.absentDirs, p)
			} else {
				l.absentFiles = append(l.absentFiles, p)
			}
			return nil
		default:
			l.protected = append(l.protected, p)
			return nil
		}
	}
	return fmt.Errorf("protected %s keeps changing", p)
}

// release ends claim: if no other command holds the workspace's lock, it
// removes the placeholders of this command's missing names (those still
// placeholders: an empty file, or a directory rmdir can remove), then lets
// the lock go. Call it once the command's boundary is gone. Idempotent.
func (l *layout) release() {
	if l.hold == nil {
		return
	}
	if unix.Flock(int(l.hold.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
		for _, p := range l.absentDirs {
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() && isPlaceholder(fi) {
				_ = unix.Rmdir(p)
			}
		}
		for _, p := range l.absentFiles {
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && isPlaceholder(fi) {
				_ = unix.Unlink(p)
			}
		}
	}
	// Failing, the conversion has dropped the shared lock already; the
	// last command there removes the placeholders.
	l.hold.Close()
	l.hold = nil
}
