// Package datadir is the layout of Logbook's data directory and the
// file handling every process that opens one shares: creating it 0700
// and refusing another user's, tightening what is in it, the exclusive
// lock of the process that owns the store and its handover from a
// reader to a writer, the running server's serve.json, the credentials
// files of the roles, and files written whole (a synced temporary file,
// then a rename or a link).
//
// A Dir is a path; its methods do the file system's I/O and hold no
// state, so a Dir is safe for concurrent use. The lock a method returns
// is the caller's: closing the file lets it go.
package datadir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/internal/procstat"
)

// Dir is Logbook's data directory, an absolute path:
//
//	lock         flock held by the process that owns the store (serve, or a command working directly)
//	jetstream/   the embedded JetStream store: the log
//	views/       Pebble projections
//	spool/       hook payloads waiting for a server
//	creds.json   the writer's NATS credentials (hook, CLI)
//	creds-reader.json, creds-follower.json, creds-worker.json  the
//	             reader's, follower's and worker's
//	stream.json  which stream the projection was made from
//	handover     flock held by a process waiting for lock while a reader
//	             holds it: the reader gives the lock up (see LockOver)
//
// Every file is 0600 and every directory 0700: Lock tightens an existing
// data dir to that (Tighten). No file here holds admin credentials.
//
//	serve.json   where the running server listens (0600), removed on clean exit
//	hook.sock    the Unix socket serve answers logbook-hook on (0600; its
//	             peers must be the data dir's user or root), removed on
//	             clean exit; one a killed serve left is replaced at start
type Dir string

// Path returns the path of elem joined below d.
func (d Dir) Path(elem ...string) string {
	return filepath.Join(append([]string{string(d)}, elem...)...)
}

// maxServeInfoBytes is the most a serve.json may hold: one is about 200
// bytes.
const maxServeInfoBytes = 64 << 10

// Ensure creates the data dir (0700) if absent. A data dir that exists
// and belongs to another user is refused (OwnerError) before anything in
// it is created or changed: root would otherwise take it over and
// tighten it. Every command that opens the data dir (Lock, the credentials)
// comes through here.
func (d Dir) Ensure() error {
	if st, err := os.Stat(string(d)); err == nil {
		if err := d.OwnerError(st); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	return nil
}

// OwnerError returns an error naming the owner and the fix when st, the
// data dir's own stat, says it belongs to a uid other than the process's
// effective uid (hookspool.OwnerError, the rule logbook-hook applies
// too); nil when it is the user's own. doctor applies the same rule.
func (d Dir) OwnerError(st fs.FileInfo) error {
	return hookspool.OwnerError(string(d), st)
}

// Tighten takes group and other permissions away from the data dir and
// everything in it: directories 0700, files 0600 at most (an owner's x
// bit stays). Symbolic links are left alone and not followed. It reports
// the first entry it cannot change.
func (d Dir) Tighten() error {
	return filepath.WalkDir(string(d), func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return fmt.Errorf("data dir permissions: %w", err)
		}
		if e.Type()&fs.ModeSymlink != 0 || (!e.IsDir() && !e.Type().IsRegular()) {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		if m := info.Mode().Perm(); m&0o077 != 0 {
			if err := os.Chmod(path, m&0o700); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("data dir permissions: %w", err)
			}
		}
		return nil
	})
}

// ErrBusy reports a data dir locked by another process.
var ErrBusy = errors.New("data dir in use")

// ReaderMark ends the role a command that only reads writes in the lock
// file ("logbook events tail (reads) pid 42"): a writer that finds the
// lock so held asks the reader to give it up (LockOver) rather than
// refuse.
const ReaderMark = " (reads)"

// Lock takes the data dir's exclusive lock without waiting. The lock file
// holds the owner's "ROLE pid N" line for error messages (ROLE ends with
// ReaderMark for a command that only reads). Closing the file releases
// it. It wraps ErrBusy, naming the holder, when another process has it.
func (d Dir) Lock(role string) (*os.File, error) {
	if err := d.Ensure(); err != nil {
		return nil, err
	}
	if err := d.Tighten(); err != nil {
		return nil, err
	}
	return d.TryLock(role)
}

// TryLock is Lock without the data dir's checks: one attempt at the flock.
func (d Dir) TryLock(role string) (*os.File, error) {
	// Not through a symbolic link: the lock is written (role and pid),
	// and a link would have that written over whatever it names.
	f, err := os.OpenFile(d.Path("lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		cause := err
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			cause = pe.Err
		}
		if errors.Is(cause, syscall.ELOOP) {
			return nil, fmt.Errorf("data dir %s: its lock file %s is a symbolic link, which Logbook does not write through: remove it (it is made again)", d, d.Path("lock"))
		}
		if errors.Is(cause, syscall.EROFS) {
			// Every command writes here: its lock, the log's store as
			// the embedded server opens it, the views as they catch up.
			return nil, fmt.Errorf("data dir %s is on a read-only file system: commands write their lock, the log's store and the views there, even to read; copy it to a writable place (cp -a) and give that to --data", d)
		}
		return nil, fmt.Errorf("data dir %s: cannot create the lock file %s: %v; give --data a directory you can write", d, d.Path("lock"), cause)
	}
	if err := flockOwn(f); err != nil {
		owner, _ := os.ReadFile(d.Path("lock"))
		f.Close()
		return nil, fmt.Errorf("%w: %s is held by %s", ErrBusy, d, lockHolder(owner))
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%s pid %d\n", role, os.Getpid())
	return f, nil
}

// ownChildWait is how long TryLock waits for a lock that only a child
// of this process holds (see flockOwn).
const ownChildWait = 2 * time.Second

// flockOwn takes f's exclusive flock without waiting, except for one
// case: the lock file names this process as its holder and no
// descriptor of this process but f is open on it. The holder is then a
// child this process is starting: between its fork and its exec it
// holds a copy of every descriptor, close-on-exec ones included, and
// with them the flock this process let go of. It is tried again every
// millisecond for up to ownChildWait. f is the lock file, open.
func flockOwn(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil || !heldByOwnChild(f) {
		return err
	}
	for deadline := time.Now().Add(ownChildWait); time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			return nil
		}
	}
	return err
}

// heldByOwnChild reports whether lock file f names this process (its
// "ROLE pid N" line) while no descriptor of this process but f's is
// open on the file (/proc/self/fd, compared by device and inode).
func heldByOwnChild(f *os.File) bool {
	b := make([]byte, 512)
	n, _ := f.ReadAt(b, 0)
	owner, ok := lockLine(b[:n])
	if !ok || !strings.HasSuffix(owner, " pid "+strconv.Itoa(os.Getpid())) {
		return false
	}
	var lock syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &lock) != nil {
		return false
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return false
	}
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd == int(f.Fd()) {
			continue
		}
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) == nil && st.Dev == lock.Dev && st.Ino == lock.Ino {
			return false // this process holds it itself
		}
	}
	return true
}

// WriterHolds returns the error Lock would give (wrapping ErrBusy, naming
// the holder) when another process that writes holds the data dir's lock
// now, without taking the lock or writing the file; nil when none holds
// it or a command that only reads does (LockOver takes it over). It is a
// probe for an error that should name the holder before another: a port
// serve cannot have because the data dir's serve has it. A holder that
// has not yet written its line counts as one that writes.
func (d Dir) WriterHolds() error {
	f, err := os.Open(d.Path("lock"))
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return nil
	}
	b, _ := os.ReadFile(d.Path("lock"))
	if owner, whole := lockLine(b); whole {
		if role, _, _ := strings.Cut(owner, " pid "); strings.HasSuffix(role, ReaderMark) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is held by %s", ErrBusy, d, lockHolder(b))
}

// LockedBy returns the pid the lock file names when its whole line
// names role (its role begins with it, e.g. "logbook serve"), as Lock
// writes it. It says nothing of whether the lock is still held.
func (d Dir) LockedBy(role string) (int, bool) {
	b, err := os.ReadFile(d.Path("lock"))
	if err != nil {
		return 0, false
	}
	owner, ok := lockLine(b)
	if !ok {
		return 0, false
	}
	r, pid, _ := strings.Cut(owner, " pid ")
	n, err := strconv.Atoi(pid)
	if err != nil || !strings.HasPrefix(r, role) {
		return 0, false
	}
	return n, true
}

// lockHolder names the holder of a data dir's lock from the lock file's
// text b, "ROLE pid N" as Lock writes it. A holder that has taken the
// lock but not yet written (or not all of) that line is "another logbook
// process (its pid not yet written)", never an empty name.
func lockHolder(b []byte) string {
	owner, ok := lockLine(b)
	if !ok {
		return "another logbook process (its pid not yet written)"
	}
	return owner
}

// lockLine returns the lock file's whole "ROLE pid N" line from its text
// b, and false while it is not all written.
func lockLine(b []byte) (string, bool) {
	owner := strings.TrimSpace(string(b))
	role, pid, ok := strings.Cut(owner, " pid ")
	if n, err := strconv.Atoi(pid); ok && err == nil && n > 0 && role != "" && strings.HasSuffix(string(b), "\n") {
		return owner, true
	}
	return "", false
}

// HandoverFile is the file a process waiting for the data dir's lock
// holds an exclusive flock on while it waits for a reader to give the
// lock up; it stays in the data dir, empty, once the wait is over.
const HandoverFile = "handover"

// HandoverPoll is how often a reader that holds the lock looks whether a
// writer waits for it, and how often a writer waiting looks whether the
// reader has let it go.
const HandoverPoll = 50 * time.Millisecond

// LockOver is Lock for a process that writes (serve, import) or reads
// once: when the lock's holder is a command that only reads, it asks
// that reader to give the lock up, through the handover file, and waits
// until it has or has ended, saying once, through wait, who it waits for
// when that takes over 2 s. A reader that follows the log gives the lock
// up within HandoverPoll; one that reads once ends. A holder that writes
// and is ending (a serve just killed: its lock goes when its files
// close, after its memory is freed) is waited for up to EndingWait. It
// returns Lock's error (wrapping ErrBusy) when the holder writes, and
// ctx's error when ctx ends first.
func (d Dir) LockOver(ctx context.Context, role string, wait func(holder string)) (*os.File, error) {
	f, err := d.Lock(role)
	if !errors.Is(err, ErrBusy) {
		return f, err
	}
	h, err := d.askHandover(ctx)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	start, told := time.Now(), false
	for {
		f, err := d.TryLock(role)
		if !errors.Is(err, ErrBusy) {
			return f, err
		}
		owner, held, n, whole := d.holder()
		switch {
		case whole && !strings.HasSuffix(held, ReaderMark) && time.Since(start) < EndingWait && ending(n):
			// A writer on its way out (killed, exiting): its lock goes
			// when its files close.
		case whole && !strings.HasSuffix(held, ReaderMark):
			return nil, err // a writer: not ours to take over
		case !whole && time.Since(start) > time.Second:
			return nil, err // a holder that never says who it is
		case whole && !told && time.Since(start) > 2*time.Second:
			wait(owner)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(HandoverPoll):
		}
	}
}

// WaitEnding waits, up to EndingWait from its call, while the data dir's
// lock is held by a writer that is ending (a serve just killed, whose
// files and sockets close once its memory is freed), and reports whether
// no writer holds the lock then: what an ending writer held (a port, say)
// went with its lock. It returns false at once when a writer that is not
// ending holds the lock, and false when the wait runs out or ctx ends.
func (d Dir) WaitEnding(ctx context.Context) bool {
	start := time.Now()
	for {
		if d.WriterHolds() == nil {
			return true
		}
		_, _, n, whole := d.holder()
		if !whole || time.Since(start) >= EndingWait || !ending(n) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(HandoverPoll):
		}
	}
}

// holder reads the lock file's line as Lock writes it: the owner
// ("<role> pid <pid>"), its role and pid, and whether the line is whole
// (a holder that has not written it yet has none).
func (d Dir) holder() (owner, role string, pid int, whole bool) {
	b, _ := os.ReadFile(d.Path("lock"))
	owner, whole = lockLine(b)
	role, p, _ := strings.Cut(owner, " pid ")
	pid, _ = strconv.Atoi(p)
	return owner, role, pid, whole
}

// EndingWait is how long LockOver waits for the lock of a writer that
// is ending (killed, or exiting: a large process takes a while to free
// its memory, and its files close after that).
const EndingWait = 10 * time.Second

// ending reports whether process pid is on its way out: gone, a zombie,
// exiting (PF_EXITING in /proc/PID/stat's flags), or with a SIGKILL
// pending (/proc/PID/status: SigPnd, ShdPnd), as proc(5) of Linux 6.x
// shows them.
func ending(pid int) bool {
	if pid <= 0 {
		return false
	}
	switch ps, err := procstat.Read(pid); {
	case err != nil:
		return errors.Is(err, fs.ErrNotExist)
	case ps.Ending():
		return true
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	const sigkill = 1 << (9 - 1)
	for _, line := range strings.Split(string(st), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != "SigPnd" && k != "ShdPnd" {
			continue
		}
		if m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && m&sigkill != 0 {
			return true
		}
	}
	return false
}

// askHandover takes the handover file's exclusive flock, waiting while
// another process holds it, and returns the file (closing it lets the
// flock go).
func (d Dir) askHandover(ctx context.Context) (*os.File, error) {
	f, err := os.OpenFile(d.Path(HandoverFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: cannot ask its reader to give the lock up: %w", d, err)
	}
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(HandoverPoll):
		}
	}
	return f, nil
}

// HandoverWanted reports whether a process waits for the data dir's lock
// (holds the handover file's flock), asking its reader to give it up.
func (d Dir) HandoverWanted() bool {
	f, err := os.Open(d.Path(HandoverFile))
	if err != nil {
		return false
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil
}

// ServeInfo says where a running server listens.
type ServeInfo struct {
	URL     string    `json:"url"`
	API     string    `json:"api"` // the server's API prefix
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Workers is how many sandbox workers serve runs; SandboxAllow, when
	// it runs any, what their restricted commands see besides the
	// workspace and the system directories (--sandbox-allow), for doctor.
	Workers      int      `json:"workers,omitempty"`
	SandboxAllow []string `json:"sandbox_allow,omitempty"`
	// Board is the board's URL (with its API and metrics) when serve
	// runs its HTTP surface, such as "http://127.0.0.1:7070/"; "" when
	// it runs none (--http off).
	Board string `json:"board,omitempty"`
	// Reader is serve --role reader, a follower of another server's
	// log: it takes no hooks and delivers no spool, so a hook on its
	// data dir delivers nothing and keeps nothing (see hookfast).
	Reader bool `json:"reader,omitempty"`
}

// ReadServeInfo returns the running server's serve.json; false when it
// is absent, not a regular file (a FIFO is never blocked on), larger
// than 64 KiB or not a serve.json object.
func (d Dir) ReadServeInfo() (ServeInfo, bool) {
	var si ServeInfo
	b, err := hookspool.ReadRegular(d.Path("serve.json"), maxServeInfoBytes)
	if err != nil || json.Unmarshal(b, &si) != nil || si.URL == "" {
		return si, false
	}
	return si, true
}

// WriteServeInfo writes si as the data dir's serve.json (0600), whole
// (WriteFileAtomic).
func (d Dir) WriteServeInfo(si ServeInfo) error {
	b, _ := json.MarshalIndent(si, "", "  ")
	return WriteFileAtomic(d.Path("serve.json"), b, 0o600)
}

// WriteFileAtomic writes b to path through a synced temporary file and a
// rename, so readers see the old or the new content, never a part. The
// file gets mode exactly (the umask does not narrow it). path must not
// be a symlink: the rename replaces the link itself.
func WriteFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp, err := writeTemp(path, b, mode)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// WriteFileNew is WriteFileAtomic for a path that must not exist: the
// synced temporary file is hard-linked to path, which fails with an
// error matching fs.ErrExist if anything is there (a symlink is not
// followed), then removed. Where the file system has no hard links, a
// rename is used once path is seen to be absent.
func WriteFileNew(path string, b []byte, mode os.FileMode) error {
	tmp, err := writeTemp(path, b, mode)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, lerr := os.Lstat(path); !errors.Is(lerr, fs.ErrNotExist) {
		return fs.ErrExist
	}
	return os.Rename(tmp, path)
}

// writeTemp writes b, synced, to a new temporary file beside path with
// mode exactly and returns its name; on error no temporary file is left.
func writeTemp(path string, b []byte, mode os.FileMode) (string, error) {
	tmp := path + ".tmp-" + strconv.Itoa(os.Getpid())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return "", err
	}
	err = f.Chmod(mode)
	if err == nil {
		_, err = f.Write(b)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// Inside reports whether path is dir or lies under it.
func Inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// WritesInto reports whether writing file (relative to the working
// directory or absolute) puts it, or the temporary file written beside
// it, under dir. It compares where the file's directory really is:
// symlinks and ".." in it and in dir are resolved as the kernel would
// resolve them (the file itself need not exist), and the directory and
// each of its parents are compared with dir by identity (device and
// inode), so a second path to dir (a bind mount) is caught too.
func WritesInto(file, dir string) bool {
	if !filepath.IsAbs(file) {
		wd, err := os.Getwd()
		if err != nil {
			return true // cannot tell where file lands: refuse
		}
		file = wd + string(filepath.Separator) + file
	}
	// The directory is everything before the last separator, taken
	// before any cleaning: "link/.." is link's target's parent, not ".".
	parent := file[:strings.LastIndexByte(file, filepath.Separator)+1]
	at, root := physicalPath(parent), physicalPath(dir)
	if Inside(at, root) {
		return true
	}
	rst, err := os.Stat(root)
	if err != nil {
		return false
	}
	for d := at; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && os.SameFile(st, rst) {
			return true
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// physicalPath returns the absolute path p names with every symlink and
// ".." resolved, as far as p exists; the part of p that does not exist
// (where no symlink can be) is joined on lexically.
func physicalPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		if abs, err := filepath.Abs(r); err == nil {
			return abs
		}
	}
	trimmed := strings.TrimRight(p, string(filepath.Separator))
	i := strings.LastIndexByte(trimmed, filepath.Separator)
	if i < 0 {
		abs, _ := filepath.Abs(p)
		return abs
	}
	return filepath.Join(physicalPath(trimmed[:i+1]), trimmed[i+1:])
}
