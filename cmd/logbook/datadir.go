package main

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

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
)

// dataDir is Logbook's data directory:
//
//	lock         flock held by the process that owns the store (serve, or a command working directly)
//	jetstream/   the embedded JetStream store: the log
//	views/       Pebble projections
//	spool/       hook payloads waiting for a server
//	creds.json   the writer's NATS credentials (hook, CLI)
//	creds-reader.json, creds-follower.json, creds-worker.json  the
//	             reader's, follower's and worker's
//	stream.json  which stream the projection was made from (see streamLoss)
//	handover     flock held by a process waiting for lock while a reader
//	             holds it: the reader gives the lock up (see lockOver)
//
// Every file is 0600 and every directory 0700: lock tightens an existing
// data dir to that (tighten). No file here holds admin credentials.
//
//	serve.json   where the running server listens (0600), removed on clean exit
//	hook.sock    the Unix socket serve answers logbook-hook on (0600; its
//	             peers must be the data dir's user or root), removed on
//	             clean exit; one a killed serve left is replaced at start
type dataDir string

func (d dataDir) path(elem ...string) string {
	return filepath.Join(append([]string{string(d)}, elem...)...)
}

// resolveDataDir picks the data directory: the flag, then $LOGBOOK_DATA,
// then $XDG_DATA_HOME/logbook, then ~/.local/share/logbook.
func resolveDataDir(flag string) (dataDir, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv("LOGBOOK_DATA")
	}
	if dir == "" {
		if x := os.Getenv("XDG_DATA_HOME"); x != "" {
			dir = filepath.Join(x, "logbook")
		}
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("data dir: %w (set --data or LOGBOOK_DATA)", err)
		}
		dir = filepath.Join(home, ".local", "share", "logbook")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("data dir %s: %w", dir, err)
	}
	// A data dir that is a file (a mistyped --data naming one) is
	// refused here, before anything looks for what is inside it.
	switch st, err := os.Stat(abs); {
	case err == nil && !st.IsDir():
		return "", fmt.Errorf("data dir %s is not a directory: give --data (or $LOGBOOK_DATA) a directory, new or holding Logbook data", abs)
	case errors.Is(err, syscall.ENOTDIR):
		return "", fmt.Errorf("data dir %s: a part of its path is a file, not a directory: give --data (or $LOGBOOK_DATA) a directory", abs)
	}
	return dataDir(abs), nil
}

// ensure creates the data dir (0700) if absent. A data dir that exists
// and belongs to another user is refused (ownerError) before anything in
// it is created or changed: root would otherwise take it over and
// tighten it. Every command that opens the data dir (lock, roleCredentials)
// comes through here.
func (d dataDir) ensure() error {
	if st, err := os.Stat(string(d)); err == nil {
		if err := d.ownerError(st); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	return nil
}

// ownerError returns an error naming the owner and the fix when st, the
// data dir's own stat, says it belongs to a uid other than the process's
// effective uid (hookspool.OwnerError, the rule logbook-hook applies
// too); nil when it is the user's own. doctor applies the same rule.
func (d dataDir) ownerError(st fs.FileInfo) error {
	return hookspool.OwnerError(string(d), st)
}

// ownerFix is what to do about a data dir of another user's.
const ownerFix = hookspool.OwnerFix

// tighten takes group and other permissions away from the data dir and
// everything in it: directories 0700, files 0600 at most (an owner's x
// bit stays). Symbolic links are left alone and not followed. It reports
// the first entry it cannot change.
func (d dataDir) tighten() error {
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

// errBusy reports a data dir locked by another process.
var errBusy = errors.New("data dir in use")

// readerMark ends the role a command that only reads writes in the lock
// file ("logbook events tail (reads) pid 42"): a writer that finds the
// lock so held asks the reader to give it up (lockOver) rather than
// refuse.
const readerMark = " (reads)"

// lock takes the data dir's exclusive lock without waiting. The lock file
// holds the owner's "ROLE pid N" line for error messages (ROLE ends with
// readerMark for a command that only reads). Closing the file releases
// it. It wraps errBusy, naming the holder, when another process has it.
func (d dataDir) lock(role string) (*os.File, error) {
	if err := d.ensure(); err != nil {
		return nil, err
	}
	if err := d.tighten(); err != nil {
		return nil, err
	}
	return d.tryLock(role)
}

// tryLock is lock without the data dir's checks: one attempt at the flock.
func (d dataDir) tryLock(role string) (*os.File, error) {
	f, err := os.OpenFile(d.path("lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		cause := err
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			cause = pe.Err
		}
		return nil, fmt.Errorf("data dir %s: cannot create the lock file %s: %v; give --data a directory you can write", d, d.path("lock"), cause)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		owner, _ := os.ReadFile(d.path("lock"))
		f.Close()
		return nil, fmt.Errorf("%w: %s is held by %s", errBusy, d, lockHolder(owner))
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%s pid %d\n", role, os.Getpid())
	return f, nil
}

// lockHolder names the holder of a data dir's lock from the lock file's
// text b, "ROLE pid N" as lock writes it. A holder that has taken the
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

// handoverFile is the file a process waiting for the data dir's lock
// holds an exclusive flock on while it waits for a reader to give the
// lock up; it stays in the data dir, empty, once the wait is over.
const handoverFile = "handover"

// handoverPoll is how often a reader that holds the lock looks whether a
// writer waits for it, and how often a writer waiting looks whether the
// reader has let it go.
const handoverPoll = 50 * time.Millisecond

// lockOver is lock for a process that writes (serve, import) or reads
// once: when the lock's holder is a command that only reads, it asks
// that reader to give the lock up, through the handover file, and waits
// until it has or has ended, saying once, through wait, who it waits for
// when that takes over 2 s. A reader that follows the log gives the lock
// up within handoverPoll; one that reads once ends. It returns lock's
// error (wrapping errBusy) when the holder writes, and ctx's error when
// ctx ends first.
func (d dataDir) lockOver(ctx context.Context, role string, wait func(holder string)) (*os.File, error) {
	f, err := d.lock(role)
	if !errors.Is(err, errBusy) {
		return f, err
	}
	h, err := d.askHandover(ctx)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	start, told := time.Now(), false
	for {
		f, err := d.tryLock(role)
		if !errors.Is(err, errBusy) {
			return f, err
		}
		b, _ := os.ReadFile(d.path("lock"))
		owner, whole := lockLine(b)
		role, _, _ := strings.Cut(owner, " pid ")
		switch {
		case whole && !strings.HasSuffix(role, readerMark):
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
		case <-time.After(handoverPoll):
		}
	}
}

// askHandover takes the handover file's exclusive flock, waiting while
// another process holds it, and returns the file (closing it lets the
// flock go).
func (d dataDir) askHandover(ctx context.Context) (*os.File, error) {
	f, err := os.OpenFile(d.path(handoverFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: cannot ask its reader to give the lock up: %w", d, err)
	}
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(handoverPoll):
		}
	}
	return f, nil
}

// handoverWanted reports whether a process waits for the data dir's lock
// (holds the handover file's flock), asking its reader to give it up.
func (d dataDir) handoverWanted() bool {
	f, err := os.Open(d.path(handoverFile))
	if err != nil {
		return false
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil
}

// serveInfo says where a running server listens.
type serveInfo struct {
	URL     string    `json:"url"`
	API     string    `json:"api"` // the server's API prefix
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Workers is how many sandbox workers serve runs; SandboxAllow, when
	// it runs any, what their restricted commands see besides the
	// workspace and the system directories (--sandbox-allow), for doctor.
	Workers      int      `json:"workers,omitempty"`
	SandboxAllow []string `json:"sandbox_allow,omitempty"`
}

// readServeInfo returns the running server's serve.json; false when it
// is absent, not a regular file (a FIFO is never blocked on), larger
// than maxCredsBytes or not a serve.json object.
func (d dataDir) readServeInfo() (serveInfo, bool) {
	var si serveInfo
	b, err := claude.ReadRegular(d.path("serve.json"), maxCredsBytes)
	if err != nil || json.Unmarshal(b, &si) != nil || si.URL == "" {
		return si, false
	}
	return si, true
}

func (d dataDir) writeServeInfo(si serveInfo) error {
	b, _ := json.MarshalIndent(si, "", "  ")
	return writeFileAtomic(d.path("serve.json"), b, 0o600)
}

// writeFileAtomic writes b to path through a synced temporary file and a
// rename, so readers see the old or the new content, never a part. The
// file gets mode exactly (the umask does not narrow it). path must not
// be a symlink: the rename replaces the link itself.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
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

// writeFileNew is writeFileAtomic for a path that must not exist: the
// synced temporary file is hard-linked to path, which fails with an
// error matching fs.ErrExist if anything is there (a symlink is not
// followed), then removed. Where the file system has no hard links, a
// rename is used once path is seen to be absent.
func writeFileNew(path string, b []byte, mode os.FileMode) error {
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
