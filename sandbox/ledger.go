package sandbox

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// The placeholder ledger. A worker killed while its WorkspaceWrite
// command runs (SIGKILL, a crash, a power cut) cannot remove the
// placeholders it made in the workspace: they would stay in the person's
// repository until the next command there. So, with Spec.Ledger, a start
// records each placeholder in that directory before it makes it
// (durably), then records the placeholder's device and inode once made;
// its release empties the record once the placeholders are gone.
// SweepPlaceholders removes what the records of dead processes name,
// only where it is still the empty entry of mode 0000 made then.
//
// A record lives in a slot: a file of this process that one start at a
// time writes, reused from start to start, so that a start pays one
// write and one fdatasync of blocks the file already has, rather than a
// new file, its fsync, a rename and the directory's fsync (about 0.3 ms
// against 3 ms on ext4). A slot file holds two halves of slotHalf bytes;
// each holds a record framed by a header (magic, sequence number,
// length, CRC-32C of all three and the record). A write goes to the
// half that does not hold the last record made durable, so a write torn
// by a crash leaves that one whole; a reader takes the whole half with
// the higher sequence number.

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
	// Boundary is the bubblewrap process the start forked, the leader of
	// the command's session; nil before the fork and once the boundary
	// is gone.
	Boundary *ledgerProc `json:"boundary,omitempty"`
}

// ledgerProc names a process across pid reuse: its pid and its start
// time (clock ticks after boot, as ProcStart returns).
type ledgerProc struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// ledger is one start's record.
type ledger struct {
	dir   string // Spec.Ledger
	slot  *slot  // where the record is written; nil until first written
	rec   ledgerRecord
	dirty bool // rec changed since it was last written
}

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
	return g.write(true)
}

// addAll records entries es at once, durably (one write), before any of
// what they name is made: a start that is to make several placeholders
// pays one write for them rather than one each.
func (g *ledger) addAll(es []ledgerEntry) error {
	if len(es) == 0 {
		return nil
	}
	g.rec.Made = append(g.rec.Made, es...)
	return g.write(true)
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

// forked notes bubblewrap's process, pid started at start; it reaches
// the record with the next write (see flush).
func (g *ledger) forked(pid int, start uint64) {
	g.rec.Boundary = &ledgerProc{Pid: pid, Start: start}
	g.dirty = true
}

// flush writes the record if made, drop or forked changed it since the last
// write, not durably: should the write be lost (a power cut), the
// record made durable before stands, which names every entry still
// made.
func (g *ledger) flush() error {
	if !g.dirty {
		return nil
	}
	return g.write(false)
}

// write writes g.rec to the start's slot, taken on the first write;
// durable waits until it is on disk.
func (g *ledger) write(durable bool) error {
	b, err := json.Marshal(g.rec)
	if err != nil {
		return err
	}
	if g.slot == nil {
		s, err := takeSlot(g.dir)
		if err != nil {
			return fmt.Errorf("placeholder ledger: %w", err)
		}
		g.slot = s
	}
	if err := g.slot.put(b, durable); err != nil {
		return fmt.Errorf("placeholder ledger %s: %w", g.slot.path, err)
	}
	g.dirty = false
	ledgerWrites.Add(1)
	return nil
}

// ledgerWrites counts the records written, by every ledger of this
// process.
var ledgerWrites atomic.Uint64

// remove empties the record (what it names is gone) and gives its slot
// back for the next start. Idempotent.
func (g *ledger) remove() {
	if g == nil || g.slot == nil {
		return
	}
	g.rec.Made, g.rec.Boundary = nil, nil
	// Not durable: should the empty record be lost, the one before names
	// entries that are gone, or are no longer what this start made.
	if g.slot.broken || g.slot.put(emptyRecord(g.rec), false) != nil {
		g.slot.discard()
	} else {
		giveSlot(g.dir, g.slot)
	}
	g.slot = nil
}

// emptyRecord is rec naming nothing.
func emptyRecord(rec ledgerRecord) []byte {
	rec.Made, rec.Boundary = nil, nil
	b, _ := json.Marshal(rec)
	return b
}

// The slot file format.
const (
	// slotHalf is the size of each half of a slot file, bytes.
	slotHalf = 32 << 10
	// slotHeader is the size of a half's header: magic (4), sequence
	// number (8, little-endian), record length (4), CRC-32C (4).
	slotHeader = 20
	// slotSuffix ends every slot file's name.
	slotSuffix = ".placeholders"
	// ledgerSuffix ended the name of a record of a file of its own,
	// written by earlier versions; a sweep still reads them.
	ledgerSuffix = ".placeholders.json"
)

var slotMagic = [4]byte{'L', 'b', 'P', 'h'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// slot is a record file of this process, written by one start at a time.
type slot struct {
	f       *os.File
	path    string
	seq     uint64 // of the last record written
	durable int    // the half holding the last record made durable
	broken  bool   // a write failed: the file is dropped at the start's end
}

// slots are the slots of this process no start holds, by ledger
// directory.
var slots struct {
	sync.Mutex
	free map[string][]*slot
}

var slotSeq atomic.Uint64

// takeSlot returns a free slot of this process in dir, or makes one: a
// file of two zeroed halves (so that later writes only overwrite blocks
// it has), fsynced, and the directory fsynced.
func takeSlot(dir string) (*slot, error) {
	slots.Lock()
	for n := len(slots.free[dir]); n > 0; n = len(slots.free[dir]) {
		s := slots.free[dir][n-1]
		slots.free[dir] = slots.free[dir][:n-1]
		var st unix.Stat_t
		if unix.Fstat(int(s.f.Fd()), &st) == nil && st.Nlink > 0 {
			slots.Unlock()
			return s, nil
		}
		s.f.Close() // removed from under this process: make another
	}
	slots.Unlock()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	pid := os.Getpid()
	start, _ := ProcStart(pid)
	var r [4]byte
	_, _ = rand.Read(r[:])
	p := filepath.Join(dir, fmt.Sprintf("%d-%d-%d-%s%s", pid, start, slotSeq.Add(1), hex.EncodeToString(r[:]), slotSuffix))
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteAt(make([]byte, 2*slotHalf), 0)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		f.Close()
		_ = os.Remove(p)
		return nil, err
	}
	return &slot{f: f, path: p, durable: 1}, nil
}

// giveSlot gives s back to the free slots of dir.
func giveSlot(dir string, s *slot) {
	slots.Lock()
	defer slots.Unlock()
	if slots.free == nil {
		slots.free = make(map[string][]*slot)
	}
	slots.free[dir] = append(slots.free[dir], s)
}

// put writes record b to the half not holding the last durable record;
// durable waits for it to be on disk (fdatasync), and it is then the
// half a later write leaves alone.
func (s *slot) put(b []byte, durable bool) error {
	if len(b) > slotHalf-slotHeader {
		return fmt.Errorf("record of %d bytes: a slot holds %d", len(b), slotHalf-slotHeader)
	}
	half := 1 - s.durable
	s.seq++
	buf := make([]byte, slotHeader+len(b))
	copy(buf, slotMagic[:])
	binary.LittleEndian.PutUint64(buf[4:], s.seq)
	binary.LittleEndian.PutUint32(buf[12:], uint32(len(b)))
	copy(buf[slotHeader:], b)
	crc := crc32.Update(crc32.Checksum(buf[:16], castagnoli), castagnoli, b)
	binary.LittleEndian.PutUint32(buf[16:], crc)
	_, err := s.f.WriteAt(buf, int64(half)*slotHalf)
	if err == nil && durable {
		err = unix.Fdatasync(int(s.f.Fd()))
		if err == nil {
			s.durable = half
		}
	}
	if err != nil {
		s.broken = true
	}
	return err
}

// discard closes s and removes its file.
func (s *slot) discard() {
	s.f.Close()
	_ = os.Remove(s.path)
}

// readSlot returns the record slot file contents b hold: the whole half
// with the higher sequence number; false if neither half is whole.
func readSlot(b []byte) (ledgerRecord, bool, error) {
	var best []byte
	var bestSeq uint64
	for half := range 2 {
		off := half * slotHalf
		if len(b) < off+slotHeader || [4]byte(b[off:off+4]) != slotMagic {
			continue
		}
		seq := binary.LittleEndian.Uint64(b[off+4:])
		n := int(binary.LittleEndian.Uint32(b[off+12:]))
		if n > slotHalf-slotHeader || len(b) < off+slotHeader+n {
			continue
		}
		body := b[off+slotHeader : off+slotHeader+n]
		crc := crc32.Update(crc32.Checksum(b[off:off+16], castagnoli), castagnoli, body)
		if crc != binary.LittleEndian.Uint32(b[off+16:]) || best != nil && seq <= bestSeq {
			continue
		}
		best, bestSeq = body, seq
	}
	if best == nil {
		return ledgerRecord{}, false, nil
	}
	var rec ledgerRecord
	if err := json.Unmarshal(best, &rec); err != nil {
		return ledgerRecord{}, false, err
	}
	return rec, true, nil
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
//
// Before any record is read, what dead processes' bubblewrap left
// running is killed (SweepBoundaries, which needs no record: a
// boundary still being set up makes missing mount points in its
// workspace). bubblewrap's first child waits, blocked, for bubblewrap to
// let it go on (its user namespace's maps), and takes its parent-death
// signal only after that wait; bubblewrap killed in between by its own
// parent-death signal (the worker died) leaves that child blocked for
// good, pid 1 of an empty pid namespace (bubblewrap 0.8.0). A dead
// process's record that still names the bubblewrap process its start
// forked has that process's tree killed too (KillTree: the leader if it
// is still that process, and what is left of its session): a bubblewrap
// an earlier version started carries no marker. killed says how many
// processes the two signalled.
func SweepPlaceholders(dir string) (removed, killed int, err error) {
	note := func(e error) {
		if err == nil && e != nil {
			err = e
		}
	}
	killed, err = SweepBoundaries()
	ents, rerr := os.ReadDir(dir)
	if errors.Is(rerr, fs.ErrNotExist) {
		return 0, killed, err
	}
	if rerr != nil {
		note(fmt.Errorf("placeholder ledger: %w", rerr))
		return 0, killed, err
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
		base, slotted := strings.CutSuffix(name, slotSuffix)
		if !slotted && !strings.HasSuffix(name, ledgerSuffix) {
			continue
		}
		b, rerr := os.ReadFile(p)
		if errors.Is(rerr, fs.ErrNotExist) {
			continue // its start ended meanwhile
		}
		var rec ledgerRecord
		whole := true
		switch {
		case rerr != nil:
		case slotted:
			rec, whole, rerr = readSlot(b)
		default:
			rerr = json.Unmarshal(b, &rec)
		}
		if rerr != nil {
			note(fmt.Errorf("placeholder ledger %s: %w", p, rerr))
			continue
		}
		if !whole {
			// A slot made but never written whole: it names nothing.
			if pid, start, ok := ledgerOwner(base); ok && !runs(pid, start, "", boot) {
				_ = os.Remove(p)
			}
			continue
		}
		if runs(rec.Pid, rec.Start, rec.Boot, boot) {
			continue
		}
		if b := rec.Boundary; b != nil {
			n, kerr := KillTree(b.Pid, b.Start, rec.Boot)
			killed += n
			note(kerr)
		}
		n, done, serr := sweepRecord(rec)
		removed += n
		note(serr)
		if done {
			_ = os.Remove(p)
		}
	}
	return removed, killed, err
}

// sweepRecord removes the placeholders rec names; done says the record
// is done with (false: the workspace is locked, or an error).
func sweepRecord(rec ledgerRecord) (removed int, done bool, err error) {
	if len(rec.Made) == 0 {
		return 0, true, nil
	}
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
