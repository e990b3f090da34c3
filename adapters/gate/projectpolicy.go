package gate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ProjectPolicyError is a project's policy file (ProjectPolicyDir in the
// call's project dir) that cannot be used, told without its text: the
// file is the project's, possibly one serve's user may read and the
// agent's user may not, and the error goes back to the agent (a denial's
// reason) and onto the log. Error names the path and, for a fault in the
// text, its line and column and that it does not parse; Detail is the
// whole fault, which may quote the file, for serve's own log only.
type ProjectPolicyError struct {
	Path         string
	Line, Column int    // 1-based; 0 when unknown
	Msg          string // quotes nothing of the file
	Detail       error  // the whole fault; nil when Msg is all of it
}

func (e *ProjectPolicyError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("policy %s:%d:%d: %s", e.Path, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("policy %s: %s", e.Path, e.Msg)
}

// Unwrap returns Detail: errors.As finds the *PolicyError, whose text
// quotes the file. Print it only where serve's user alone reads.
func (e *ProjectPolicyError) Unwrap() error { return e.Detail }

// policyDetail returns the text of e for serve's own log: a project's
// fault whole (ProjectPolicyError.Detail), any other error as it is.
func policyDetail(e error) string {
	if pe, ok := errors.AsType[*ProjectPolicyError](e); ok && pe.Detail != nil {
		return pe.Detail.Error()
	}
	return e.Error()
}

// projectFault returns the ProjectPolicyError of path's parse error err
// (a *PolicyError from ParsePolicy).
func projectFault(path string, err error) *ProjectPolicyError {
	what := "does not parse"
	pe, ok := errors.AsType[*PolicyError](err)
	if ok {
		// The kind of fault, in words of its own: never the file's.
		switch m := pe.Msg; {
		case strings.HasPrefix(m, "not valid TOML"):
			what = "not valid TOML"
		case strings.HasPrefix(m, "unknown key"):
			what = "an unknown key"
		case strings.HasPrefix(m, "pattern ") && strings.Contains(m, ": risk "):
			what = "a risk class that is not low, medium, high or critical"
		case strings.HasPrefix(m, "pattern "):
			what = "a pattern that does not parse"
		}
	}
	e := &ProjectPolicyError{Path: path, Msg: what + " (logbook policy check " + strconv.Quote(path) + " names the fault)", Detail: err}
	if ok {
		e.Line, e.Column = pe.Line, pe.Column
	}
	return e
}

// projectFile is a project's policy file opened (openProject), with what
// tells a changed file from the one read before.
type projectFile struct {
	f     *os.File
	stamp string // device, inode, size, modification time
}

// openProject opens dir's policy file, dir/ProjectPolicyDir/PolicyFile,
// following no symbolic link below dir: a .logbook that is a link, or a
// policy.toml that is one, is refused, as is anything but a regular file
// of at most MaxPolicyFile bytes. peer, when not nil, is the uid of the
// system socket's peer whose call this is (serve runs as another user):
// the file must then be the peer's own or root's (root's with one link
// only), or it is refused. A missing .logbook or file is (nil, nil).
// Errors are *ProjectPolicyError and quote nothing of the file.
func openProject(dir string, peer *uint32) (*projectFile, error) {
	p := filepath.Join(dir, ProjectPolicyDir, PolicyFile)
	refuse := func(format string, args ...any) error {
		return &ProjectPolicyError{Path: p, Msg: fmt.Sprintf(format, args...)}
	}
	dfd, err := openNoEINTR(unix.AT_FDCWD, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, refuse("project dir: %v", err)
	}
	defer unix.Close(dfd)
	lfd, err := openNoEINTR(dfd, ProjectPolicyDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR) && isLink(dfd, ProjectPolicyDir):
		return nil, refuse("%s is a symbolic link: a project's policy is read from no link", ProjectPolicyDir)
	case errors.Is(err, unix.ENOTDIR):
		return nil, nil // a file named .logbook holds no policy
	case err != nil:
		return nil, refuse("%s: %v", ProjectPolicyDir, err)
	}
	defer unix.Close(lfd)
	fd, err := openNoEINTR(lfd, PolicyFile, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil
	case errors.Is(err, unix.ELOOP):
		return nil, refuse("a symbolic link: a project's policy is read from no link")
	case err != nil:
		return nil, refuse("%v", err)
	}
	f := os.NewFile(uintptr(fd), p)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, refuse("stat: %v", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		kind, ok := map[uint32]string{unix.S_IFIFO: "a FIFO", unix.S_IFCHR: "a character device", unix.S_IFBLK: "a block device",
			unix.S_IFSOCK: "a socket", unix.S_IFDIR: "a directory"}[st.Mode&unix.S_IFMT]
		if !ok {
			kind = "a special file"
		}
		return nil, refuse("not a regular file (%s)", kind)
	}
	if st.Size > MaxPolicyFile {
		f.Close()
		return nil, refuse("%d bytes, over the limit of %d", st.Size, MaxPolicyFile)
	}
	if peer != nil {
		switch {
		case st.Uid != *peer && st.Uid != 0:
			f.Close()
			return nil, refuse("owned by uid %d, not by the caller (uid %d) or root: not read", st.Uid, *peer)
		case st.Uid == 0 && *peer != 0 && st.Nlink > 1:
			f.Close()
			return nil, refuse("a file of root's with %d links: not read for uid %d", st.Nlink, *peer)
		}
	}
	stamp := fmt.Sprintf("%d/%d/%d/%d/%d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
	return &projectFile{f: f, stamp: stamp}, nil
}

// read reads pf's text, at most MaxPolicyFile bytes, and closes it.
func (pf *projectFile) read() ([]byte, error) {
	defer pf.f.Close()
	b, err := io.ReadAll(io.LimitReader(pf.f, MaxPolicyFile+1))
	if err != nil {
		return nil, &ProjectPolicyError{Path: pf.f.Name(), Msg: "read: " + err.Error()}
	}
	if len(b) > MaxPolicyFile {
		return nil, &ProjectPolicyError{Path: pf.f.Name(), Msg: fmt.Sprintf("more than %d bytes, the limit", MaxPolicyFile)}
	}
	return b, nil
}

// isLink reports whether name in directory dfd is a symbolic link.
func isLink(dfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// openNoEINTR is openat(2), tried again when a signal interrupts it.
func openNoEINTR(dfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// loadProject reads dir's policy file now, if it changed since the read
// before for the same peer (see openProject), as load does the data
// dir's: nil when there is none; a file that no longer parses keeps the
// policy read before in force (an edit being made). One that is refused
// (a link, not a regular file, not the peer's, too large, unreadable)
// has no policy in force, whatever was read before: its calls are
// denied, as a file's that never parsed, since what was read before is
// not what the project holds now. Its errors are *ProjectPolicyError.
func (ps *Policies) loadProject(dir string, peer *uint32) *loaded {
	p := filepath.Join(dir, ProjectPolicyDir, PolicyFile)
	key := p
	if peer != nil {
		key = p + "\x00uid=" + strconv.FormatUint(uint64(*peer), 10)
	}
	pf, err := openProject(dir, peer)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.files == nil {
		ps.files = map[string]*loaded{}
	}
	old := ps.files[key]
	switch {
	case pf == nil && err == nil:
		delete(ps.files, key)
		return nil
	case err != nil:
		nl := &loaded{err: err}
		ps.files[key] = nl
		return nl
	}
	if old != nil && old.stamp == pf.stamp {
		pf.f.Close()
		return old
	}
	nl := &loaded{stamp: pf.stamp}
	if text, err := pf.read(); err != nil {
		nl.err = err
	} else if pol, err := ParsePolicy(p, text); err != nil {
		nl.err = projectFault(p, err)
		if old != nil {
			nl.policy = old.policy
		}
	} else {
		if pol.projectAllows {
			// Only the data dir's file can put a project's allows in
			// force: said where the file's warnings are.
			pol.Warnings = append(pol.Warnings, &PolicyError{Path: p, Msg: "project_allows means nothing in a project's file: only the data dir's policy.toml puts a project's allow rules in force"})
		}
		nl.policy = pol
	}
	ps.files[key] = nl
	return nl
}
