package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The placeholder ledger. A worker killed while its WorkspaceWrite
// command runs (SIGKILL, a crash, a power cut) cannot remove the
// placeholders it made in the workspace: they would stay in the person's
// repository until the next command there. So, with Spec.Ledger, a start
// records each placeholder in a file of its own in that directory before
// it makes it (fsynced), then records the placeholder's device and inode
// once made; its release removes the record with the placeholders.
// SweepPlaceholders removes what the records of dead processes name,
// only where it is still the empty entry of mode 0000 made then.

// ledgerEntry is one placeholder of a start, at the workspace's top level.
type ledgerEntry struct {
	Name string `json:"name"`
	Dir  bool   `json:"dir"`
	// Since is when the start was about to make it (Unix ns): an entry
	// recorded without its inode (the process died in between) is taken
	// as the start's only if it changed no earlier.
	Since int64  `json:"since,omitempty"`
	Dev   uint64 `json:"dev,omitempty"`
	Ino   uint64 `json:"ino,omitempty"`
}

// ledgerRecord is what one start made: the process that made it (pid,
// start time, boot id) and the placeholders.
type ledgerRecord struct {
	Pid       int           `json:"pid"`
	Start     uint64        `json:"start,omitempty"`
	Boot      string        `json:"boot,omitempty"`
	Workspace string        `json:"workspace"`
	Made      []ledgerEntry `json:"made"`
}

// ledger is one start's record file.
type ledger struct {
	dir   string // Spec.Ledger
	path  string // the record; "" until first written
	rec   ledgerRecord
	dirty bool // rec changed since it was last written
}

var ledgerSeq atomic.Uint64

// ledgerSuffix ends every record's name; a record being written ends in
// ledgerSuffix+".tmp".
const ledgerSuffix = ".placeholders.json"

// newLedger returns the ledger of a start in workspace ws, recording in
// dir; nil if dir is "".
func newLedger(dir, ws string) *ledger {
	if dir == "" {
		return nil
	}
	pid := os.Getpid()
	start, _ := ProcStart(pid)
	return &ledger{dir: dir, rec: ledgerRecord{Pid: pid, Start: start, Boot: BootID(), Workspace: ws}}
}

// add records entry e, durably, before what it names is made or used.
func (g *ledger) add(e ledgerEntry) error {
	g.rec.Made = append(g.rec.Made, e)
	return g.write()
}

// addAll records entries es at once, durably (one write), before any of
// what they name is made: a start that is to make several placeholders
// pays one write for them rather than one each.
func (g *ledger) addAll(es []ledgerEntry) error {
	if len(es) == 0 {
		return nil
	}
	g.rec.Made = append(g.rec.Made, es...)
	return g.write()
}

// made notes the device and inode of the entry named name, now made; it
// reaches the record with the next write (see flush). Until then a sweep
// knows the entry by its Since alone, as it would had the start died
// between making it and recording its inode.
func (g *ledger) made(name string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("no inode")
	}
	for i := range g.rec.Made {
		if e := &g.rec.Made[i]; e.Name == name {
			e.Dev, e.Ino = uint64(st.Dev), st.Ino
			g.dirty = true
		}
	}
	return nil
}

// drop forgets the entry named name: it was not made after all. The
// record keeps it until the next write (see flush): a sweep removes
// under its name only a placeholder changed since the entry's Since.
func (g *ledger) drop(name string) {
	g.rec.Made = slices.DeleteFunc(g.rec.Made, func(e ledgerEntry) bool { return e.Name == name })
	g.dirty = true
}

// flush writes the record if made or drop changed it since the last
// write. The directory is not synced: should the rename be lost (a
// power cut), the record written before stands, which names every
// entry still made.
func (g *ledger) flush() error {
	if !g.dirty {
		return nil
	}
	return g.writeSync(false)
}

// write replaces the record file with g.rec: written aside, fsynced,
// renamed, the directory fsynced.
func (g *ledger) write() error { return g.writeSync(true) }

// writeSync is write, syncing the directory after the rename only when
// dir is true.
func (g *ledger) writeSync(dir bool) error {
	if g.path == "" {
		if err := os.MkdirAll(g.dir, 0o700); err != nil {
			return fmt.Errorf("placeholder ledger: %w", err)
		}
		var r [4]byte
		_, _ = rand.Read(r[:])
		g.path = filepath.Join(g.dir, fmt.Sprintf("%d-%d-%d-%s%s", g.rec.Pid, g.rec.Start, ledgerSeq.Add(1), hex.EncodeToString(r[:]), ledgerSuffix))
	}
	b, err := json.Marshal(g.rec)
	if err != nil {
		return err
	}
	tmp := g.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("placeholder ledger: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, g.path)
	}
	if err == nil && dir {
		err = syncDir(g.dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("placeholder ledger: %w", err)
	}
	g.dirty = false
	ledgerWrites.Add(1)
	return nil
}

// ledgerWrites counts the records written, by every ledger of this
// process: what a start pays in fsyncs is twice that.
var ledgerWrites atomic.Uint64

// remove deletes the record: what it names is gone. Idempotent.
func (g *ledger) remove() {
	if g == nil || g.path == "" {
		return
	}
	_ = os.Remove(g.path)
	g.path, g.rec.Made = "", nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// SweepPlaceholders removes the placeholders that WorkspaceWrite starts
// recorded in ledger directory dir (Spec.Ledger) and whose process is
// gone (its pid no longer runs with the recorded start time, or the host
// has booted since): a worker killed while its command ran leaves them
// in the workspace. Only what is still the entry the start made is
// removed: the same device and inode (or, recorded without them, changed
// since the start was about to make it), still empty, of mode 0000; a
// file or directory a person made under the same name stays. A workspace
// where a command holds the lock now (see lock) is left for a later
// sweep: that command may have its mount there, and removes the
// placeholder at its end. Records done with are deleted. It returns how
// many placeholders it removed and the first error met (it goes on past
// it). A missing dir holds nothing.
func SweepPlaceholders(dir string) (removed int, err error) {
	ents, rerr := os.ReadDir(dir)
	if errors.Is(rerr, fs.ErrNotExist) {
		return 0, nil
	}
	if rerr != nil {
		return 0, fmt.Errorf("placeholder ledger: %w", rerr)
	}
	note := func(e error) {
		if err == nil && e != nil {
			err = e
		}
	}
	boot := BootID()
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(dir, name)
		if base, ok := strings.CutSuffix(name, ledgerSuffix+".tmp"); ok {
			// A record being written when its process died.
			if pid, start, ok := ledgerOwner(base); ok && !runs(pid, start, "", boot) {
				_ = os.Remove(p)
			}
			continue
		}
		if !strings.HasSuffix(name, ledgerSuffix) {
			continue
		}
		b, rerr := os.ReadFile(p)
		if errors.Is(rerr, fs.ErrNotExist) {
			continue // its start ended meanwhile
		}
		var rec ledgerRecord
		if rerr == nil {
			rerr = json.Unmarshal(b, &rec)
		}
		if rerr != nil {
			note(fmt.Errorf("placeholder ledger %s: %w", p, rerr))
			continue
		}
		if runs(rec.Pid, rec.Start, rec.Boot, boot) {
			continue
		}
		n, done, serr := sweepRecord(rec)
		removed += n
		note(serr)
		if done {
			_ = os.Remove(p)
		}
	}
	return removed, err
}

// sweepRecord removes the placeholders rec names; done says the record
// is done with (false: the workspace is locked, or an error).
func sweepRecord(rec ledgerRecord) (removed int, done bool, err error) {
	ws, err := openDir(rec.Workspace)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return 0, true, nil // gone, or no longer the directory it was
	}
	if err != nil {
		return 0, false, fmt.Errorf("placeholders in %s: %w", rec.Workspace, err)
	}
	defer ws.Close()
	if err := unix.Flock(int(ws.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("placeholders in %s: lock: %w", rec.Workspace, err)
	}
	fd := int(ws.Fd())
	for _, e := range rec.Made {
		if e.Name == "" || strings.Contains(e.Name, "/") || e.Name == "." || e.Name == ".." {
			continue
		}
		var st unix.Stat_t
		if serr := unix.Fstatat(fd, e.Name, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil {
			if !errors.Is(serr, unix.ENOENT) && err == nil {
				err = fmt.Errorf("placeholder %s: %w", filepath.Join(rec.Workspace, e.Name), serr)
			}
			continue
		}
		if !ledgerMatch(e, &st) {
			continue // not what the start made: a person's own
		}
		flags := 0
		if e.Dir {
			flags = unix.AT_REMOVEDIR
		}
		if uerr := unix.Unlinkat(fd, e.Name, flags); uerr == nil {
			removed++
		} else if !errors.Is(uerr, unix.ENOENT) && !errors.Is(uerr, unix.ENOTEMPTY) && err == nil {
			err = fmt.Errorf("placeholder %s: %w", filepath.Join(rec.Workspace, e.Name), uerr)
		}
	}
	return removed, err == nil, err
}

// ledgerMatch reports whether st is still the placeholder e recorded.
func ledgerMatch(e ledgerEntry, st *unix.Stat_t) bool {
	kind := st.Mode & unix.S_IFMT
	switch {
	case st.Mode&0o7777 != 0:
		return false
	case e.Dir && kind != unix.S_IFDIR:
		return false
	case !e.Dir && (kind != unix.S_IFREG || st.Size != 0):
		return false
	case e.Ino != 0:
		return uint64(st.Dev) == e.Dev && st.Ino == e.Ino
	}
	return e.Since != 0 && st.Ctim.Nano() >= e.Since
}

// runs reports whether the process that wrote a record runs: pid runs,
// with the recorded start time (when known), on the recorded boot (when
// known).
func runs(pid int, start uint64, recBoot, boot string) bool {
	if recBoot != "" && boot != "" && recBoot != boot {
		return false
	}
	if pid <= 0 || !alive(pid) {
		return false
	}
	if start == 0 {
		return true
	}
	now, err := ProcStart(pid)
	return err != nil || now == start
}

// ledgerOwner returns the pid and start time a record's name begins with.
func ledgerOwner(base string) (int, uint64, bool) {
	f := strings.SplitN(base, "-", 3)
	if len(f) < 3 {
		return 0, 0, false
	}
	pid, err := strconv.Atoi(f[0])
	start, serr := strconv.ParseUint(f[1], 10, 64)
	return pid, start, err == nil && serr == nil && pid > 0
}

// has reports whether name is recorded already.
func (g *ledger) has(name string) bool {
	for _, e := range g.rec.Made {
		if e.Name == name {
			return true
		}
	}
	return false
}
