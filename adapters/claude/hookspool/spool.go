package hookspool

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/redact/cut"
	"github.com/logbook-dev/logbook/events"
)

// Spool is a durable local queue of hook payloads: one file per payload
// in one directory, named <ULID>.json so names sort in arrival order. A
// hook process Puts its payload and exits; a deliverer takes the Lock,
// reads Pending entries, delivers them and Removes each.
//
// Several processes may use one spool directory at once: every Put writes
// its own file (a temporary file, fsynced, renamed into place, then the
// directory fsynced), so a crash leaves either the whole entry or only an
// ignored temporary file. Arrival order holds within a process (ULIDs
// from one process are monotonic); entries that different processes put
// within the same millisecond sort in an arbitrary but fixed order. A
// Spool value is immutable and safe for concurrent use.
type Spool struct {
	dir string
}

// Entry is one spooled payload.
type Entry struct {
	ID      string    // the entry's ULID, e.g. "01JDQ…"; its file is <ID>.json
	Time    time.Time // when it was put, from the ULID (ms)
	Payload []byte
	// Process is the agent process the hook ran under, nil when none was
	// found. It is kept beside the payload (<ID>.process), so the
	// payload's bytes stay exactly as the agent sent them.
	Process *events.Process
	// Sender is the user who sent the hook over serve's system socket,
	// by its peer credentials; nil for a hook that came any other way.
	// It is never spooled.
	Sender *events.Sender
	// Verdict is what a gated hook answered the agent on its own, with
	// no server to ask (PutVerdict), nil for an entry without one. It is
	// kept beside the payload (<ID>.verdict) for the server to record
	// when it delivers the entry.
	Verdict *LocalVerdict
}

// LocalRule is the DecidedBy name of a LocalVerdict: the hook failed
// closed, with no server (or no logbook program) to ask.
const LocalRule = "local policy: fail closed"

// LocalVerdict is a gate verdict a hook gave by itself, without a
// server: the fail-closed deny of `hook claude --gate` when no server
// could be asked. Its JSON form is the spool's <ID>.verdict file.
type LocalVerdict struct {
	Verdict string           `json:"verdict"`            // events.VerdictDeny (the hook never allows on its own)
	Outcome string           `json:"outcome"`            // an events.Review* outcome: unavailable, timed_out
	Reason  string           `json:"reason"`             // what the agent was told, redacted
	By      events.DecidedBy `json:"decided_by"`         // who decided: events.DecidedByHook and the rule it applied
	At      time.Time        `json:"at,omitzero"`        // when it answered
	Budget  int64            `json:"budget_ms,omitzero"` // the hook's budget, ms
	// ArgsDigest is "sha256:" and the hex SHA-256 of the call's whole
	// tool_input when the payload kept beside the verdict was cut
	// (PrepareHook): the bytes the hook had, which the cut copy no
	// longer holds; "" when the payload is whole (or the hook links no
	// hash: logbook-hook).
	ArgsDigest string `json:"args_digest,omitempty"`
}

// FailClosedVerdict returns the LocalVerdict of a hook that failed closed
// for want of a verdict, at at, with a budget of budget (0: none): deny,
// outcome unavailable, decided by the hook under LocalRule, its reason
// why (redacted by the caller).
func FailClosedVerdict(why string, at time.Time, budget time.Duration) LocalVerdict {
	return LocalVerdict{
		Verdict: events.VerdictDeny, Outcome: events.ReviewUnavailable, Reason: why,
		By: events.DecidedBy{Kind: events.DecidedByHook, Name: LocalRule},
		At: at.UTC().Truncate(time.Microsecond), Budget: budget.Milliseconds(),
	}
}

// ErrLocked reports that another holder has the spool's delivery lock.
var ErrLocked = errors.New("spool: delivery lock held elsewhere")

const (
	processExt = ".process"
	verdictExt = ".verdict"
	spoolExt   = ".json"
	tmpPrefix  = ".tmp-"
	lockName   = ".lock"
)

// Open returns the spool in dir, creating dir (mode 0700) if needed.
// dir's parent is the data dir: one that exists and belongs to another
// user than the process's effective uid is refused (CheckOwner, one
// stat) before anything is created, with an error wrapping ErrNotOwner
// that names it, its owner and the process's uid.
func Open(dir string) (*Spool, error) {
	if err := CheckOwner(filepath.Dir(dir)); err != nil {
		return nil, fmt.Errorf("open spool: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open spool: %w", err)
	}
	return &Spool{dir: dir}, nil
}

// Dir returns the spool's directory.
func (s *Spool) Dir() string { return s.dir }

// Put stores payload durably and returns its entry id. When Put returns
// nil the entry survives a crash; on error nothing is left but possibly a
// temporary file, which Pending ignores and Sweep removes.
func (s *Spool) Put(payload []byte) (string, error) { return s.PutFrom(payload, nil) }

// PutFrom is Put for a payload that came from agent process p (nil: not
// known). The process is stored in its own file, durable before the
// payload's file appears, so an entry never lacks the process it had.
func (s *Spool) PutFrom(payload []byte, p *events.Process) (string, error) {
	id := NewID()
	return id, s.PutAs(id, payload, p)
}

// entryIDs holds the last id NewID made in this process, under its lock.
var entryIDs struct {
	sync.Mutex
	last ulid.ULID
}

// NewID returns a fresh id for a hook payload or a spool entry: a ULID
// whose 48-bit time is the wall clock's millisecond, whose next 20 bits
// are the nanoseconds within it, and whose last 60 bits are the
// kernel's random bytes. Entries are delivered in the order of their
// ids, so an id sorts after every id made before it on this host
// (hooks that follow one another within a millisecond are separate
// processes) while the wall clock does not step back, and in this
// process after every id it made before, whatever the clock. A hook
// sends its payload under this id and, when it cannot, spools it under
// the same one.
//
// Its entropy is read with getrandom(2) directly: crypto/rand would
// bring the FIPS 140 module's package initializations into every hook
// process.
func NewID() string {
	entryIDs.Lock()
	defer entryIDs.Unlock()
	var rnd [8]byte
	if _, err := (kernelRandom{}).Read(rnd[:]); err != nil {
		panic(err) // getrandom(2) fails only when the kernel has none
	}
	id := idAt(time.Now(), binary.BigEndian.Uint64(rnd[:]))
	if id.Compare(entryIDs.last) <= 0 {
		// The clock stood still or stepped back: one past the last.
		id = entryIDs.last
		for i := len(id) - 1; i >= 6; i-- {
			id[i]++
			if id[i] != 0 {
				break
			}
		}
	}
	entryIDs.last = id
	return id.String()
}

// idAt returns the ULID of NewID for wall time t and random bits rnd
// (its low 60 bits are used).
func idAt(t time.Time, rnd uint64) ulid.ULID {
	var id ulid.ULID
	_ = id.SetTime(uint64(t.UnixMilli()))
	sub := uint64(t.Nanosecond() % 1_000_000) // < 2^20
	low := sub<<60 | rnd&(1<<60-1)            // the entropy's low 64 of 80 bits
	id[6] = byte(sub >> 12)
	id[7] = byte(sub >> 4)
	binary.BigEndian.PutUint64(id[8:], low)
	return id
}

// kernelRandom reads random bytes from the kernel's CSPRNG with
// getrandom(2), blocking only until it is seeded, early at boot.
type kernelRandom struct{}

// Read fills p with random bytes; it fails only if getrandom does.
func (kernelRandom) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Getrandom(p[n:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, os.NewSyscallError("getrandom", err)
		}
		n += m
	}
	return n, nil
}

// PutAs is PutFrom under a given id, a ULID the caller made (ulid.Make):
// when the payload cannot be written, the files kept beside it (its
// process, and a verdict PutVerdict kept for it) are removed too.
// a hook that tried to deliver its payload straight to the server and
// failed spools it under the id it already sent, so a server that did
// take it sees the spooled copy as the same observation.
func (s *Spool) PutAs(id string, payload []byte, p *events.Process) error {
	if _, err := ulid.ParseStrict(id); err != nil {
		return fmt.Errorf("spool put %q: id: %w", id, err)
	}
	if p != nil {
		b, err := json.Marshal(p)
		if err == nil {
			err = s.write(id, processExt, b)
		}
		if err != nil {
			return fmt.Errorf("spool put %s: %w", id, err)
		}
	}
	if err := s.write(id, spoolExt, payload); err != nil {
		// The payload never landed (a full disk, most often): the files
		// kept beside it would only wait for Sweep.
		_ = os.Remove(filepath.Join(s.dir, id+processExt))
		_ = os.Remove(filepath.Join(s.dir, id+verdictExt))
		return fmt.Errorf("spool put %s: %w", id, err)
	}
	if err := s.syncDir(); err != nil {
		return fmt.Errorf("spool put %s: %w", id, err)
	}
	return nil
}

// PutVerdict keeps v beside entry id (<id>.verdict, fsynced, then the
// directory): the verdict a gated hook gave by itself for the payload it
// spools, for the server to record when it delivers the entry. Put it
// before the payload (PutAs) so a deliverer never takes the payload
// without it; put after, it is recorded only if the entry has not been
// delivered yet. A verdict whose payload never lands is removed by Sweep.
func (s *Spool) PutVerdict(id string, v LocalVerdict) error {
	if _, err := ulid.ParseStrict(id); err != nil {
		return fmt.Errorf("spool verdict %q: id: %w", id, err)
	}
	b, err := json.Marshal(v)
	if err == nil {
		err = s.write(id, verdictExt, b)
	}
	if err == nil {
		err = s.syncDir()
	}
	if err != nil {
		return fmt.Errorf("spool verdict %s: %w", id, err)
	}
	return nil
}

// HasPending reports whether any entry waits in the spool, from the
// directory's names alone (no entry is read): what a hook asks before it
// delivers its payload past the spool, so it never overtakes one. It
// lists the directory with getdents(2) directly, as ReadRegular reads:
// no network poller for a hook that asks and exits.
func (s *Spool) HasPending() (bool, error) {
	fd, err := openFile(s.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return false, fmt.Errorf("spool pending: %w", err)
	}
	defer unix.Close(fd)
	found := false
	err = readDirents(fd, s.dir, func(name string, typ fs.FileMode) bool {
		if id, ok := strings.CutSuffix(name, spoolExt); ok && typ.IsRegular() {
			if _, err := ulid.ParseStrict(id); err == nil {
				found = true
			}
		}
		return !found
	})
	if err != nil {
		return false, fmt.Errorf("spool pending: %w", err)
	}
	return found, nil
}

// readDirents calls f with the name and type of each entry of the
// directory open as fd (dir names it), "." and ".." left out, in the
// order the file system lists them, until f returns false or the listing
// ends. An entry whose type the file system does not say is lstat'ed, as
// os.ReadDir does; one gone by then is left out. Errors are
// *fs.PathError naming dir.
func readDirents(fd int, dir string, f func(name string, typ fs.FileMode) bool) error {
	// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16,
	// d_type u8, d_name NUL-terminated.
	const reclenAt, typeAt, nameAt = 16, 18, 19
	var buf [1024]byte // room for 3 entries of the longest name; kept small, on the stack
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if n <= 0 {
			return nil
		}
		for b := buf[:n]; len(b) > 0; {
			if len(b) < nameAt {
				return &fs.PathError{Op: "readdirent", Path: dir, Err: unix.EIO}
			}
			reclen := int(binary.NativeEndian.Uint16(b[reclenAt:]))
			if reclen < nameAt || reclen > len(b) {
				return &fs.PathError{Op: "readdirent", Path: dir, Err: unix.EIO}
			}
			name := b[nameAt:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			typ, dt := fs.FileMode(0), b[typeAt]
			b = b[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			switch dt {
			case unix.DT_REG:
			case unix.DT_UNKNOWN:
				var st unix.Stat_t
				path := filepath.Join(dir, string(name))
				if err := retryEINTR(func() error { return unix.Lstat(path, &st) }); err == unix.ENOENT {
					continue
				} else if err != nil {
					return &fs.PathError{Op: "lstat", Path: path, Err: err}
				}
				typ = typeMode(st.Mode)
			default:
				typ = typeMode(uint32(dt) << 12) // DT_x is S_IFx >> 12
			}
			if !f(string(name), typ) {
				return nil
			}
		}
	}
}

// write stores payload as <id><ext> through a fsynced temporary file.
func (s *Spool) write(id, ext string, payload []byte) error {
	tmp := filepath.Join(s.dir, tmpPrefix+id+ext)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(payload)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.dir, id+ext))
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// Pending returns the spooled entries in id order (arrival order, see
// Spool). Temporary files and foreign names are ignored, and so is an
// entry removed while Pending runs.
func (s *Spool) Pending() ([]Entry, error) { return s.PendingFirst(0) }

// PendingFirst is Pending that reads at most n entries (the oldest) into
// memory; n ≤ 0 means all of them. A caller draining a spool that grew
// while no one delivered it reads it page by page this way.
func (s *Spool) PendingFirst(n int) ([]Entry, error) {
	ents, err := os.ReadDir(s.dir) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("spool pending: %w", err)
	}
	var out []Entry
	for _, e := range ents {
		if n > 0 && len(out) >= n {
			break
		}
		id, ok := strings.CutSuffix(e.Name(), spoolExt)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		u, err := ulid.ParseStrict(id)
		if err != nil {
			continue
		}
		b, err := readEntry(filepath.Join(s.dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotRegular) {
			continue // gone, or swapped since it was listed: SetAsideStrays takes it
		}
		if err != nil {
			return nil, fmt.Errorf("spool pending: %w", err)
		}
		ent := Entry{ID: id, Time: ulid.Time(u.Time()), Payload: b}
		if pb, err := os.ReadFile(filepath.Join(s.dir, id+processExt)); err == nil {
			var p events.Process
			if json.Unmarshal(pb, &p) == nil {
				ent.Process = &p
			}
		}
		if vb, err := os.ReadFile(filepath.Join(s.dir, id+verdictExt)); err == nil {
			var v LocalVerdict
			if json.Unmarshal(vb, &v) == nil {
				ent.Verdict = &v
			}
		}
		out = append(out, ent)
	}
	return out, nil
}

// readEntry reads a spool entry's payload: at most MaxHookRead+1 bytes,
// so that a file far larger (put there by hand) costs no more memory than
// the payload its deliverer refuses as too large. A file that is not
// regular by the time it is opened is refused (ErrNotRegular).
func readEntry(path string) ([]byte, error) {
	f, _, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxHookRead+1))
}

// SetAsideStrays moves every file of the spool that is named as an entry
// (<ULID>.json) but is not a regular file — a FIFO, a device, a symlink,
// a directory; no hook writes one — into rejected/ as it is (the link or
// node itself, never what it points to), with a <ULID>.why saying what it
// was, so that it neither blocks the entries behind it nor keeps hooks
// spooling. It returns the names it moved. The caller holds the
// delivery lock.
func (s *Spool) SetAsideStrays() ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("spool strays: %w", err)
	}
	var moved []string
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), spoolExt)
		if !ok || e.Type().IsRegular() {
			continue
		}
		if _, err := ulid.ParseStrict(id); err != nil {
			continue
		}
		dir := filepath.Join(s.dir, RejectedDir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return moved, fmt.Errorf("spool strays: %w", err)
		}
		why := NotRegular(e.Name(), e.Type()).Error() + "; no hook writes one: set aside unread\n"
		if err := writeFileSync(filepath.Join(dir, id+".why"), []byte(why)); err != nil {
			return moved, fmt.Errorf("spool strays: %w", err)
		}
		if err := os.Rename(filepath.Join(s.dir, e.Name()), filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return moved, fmt.Errorf("spool strays: %w", err)
		}
		moved = append(moved, e.Name())
	}
	return moved, nil
}

// Remove deletes entry id. Removing an entry that is gone is not an
// error; an id that is not a ULID is.
func (s *Spool) Remove(id string) error {
	if _, err := ulid.ParseStrict(id); err != nil {
		return fmt.Errorf("spool remove %q: not an entry id: %w", id, err)
	}
	err := os.Remove(filepath.Join(s.dir, id+spoolExt))
	if errors.Is(err, fs.ErrNotExist) {
		_ = os.Remove(filepath.Join(s.dir, id+processExt))
		_ = os.Remove(filepath.Join(s.dir, id+verdictExt))
		return nil
	}
	if err == nil {
		_ = os.Remove(filepath.Join(s.dir, id+processExt))
		_ = os.Remove(filepath.Join(s.dir, id+verdictExt))
	}
	if err == nil {
		err = s.syncDir()
	}
	if err != nil {
		return fmt.Errorf("spool remove %s: %w", id, err)
	}
	return nil
}

// Sweep removes temporary files left by Puts that crashed, if they are
// older than age at now, and returns how many it removed. Call it while
// holding the Lock; a Put in progress is younger than any sensible age.
func (s *Spool) Sweep(now time.Time, age time.Duration) (int, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("spool sweep: %w", err)
	}
	n := 0
	for _, e := range ents {
		orphan := false
		for _, ext := range []string{processExt, verdictExt} {
			if id, ok := strings.CutSuffix(e.Name(), ext); ok {
				// A process or verdict file whose payload never landed
				// or was moved aside.
				_, err := os.Stat(filepath.Join(s.dir, id+spoolExt))
				orphan = errors.Is(err, fs.ErrNotExist)
			}
		}
		if !orphan && !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("spool sweep: %w", err)
		}
		if now.Sub(info.ModTime()) < age {
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("spool sweep: %w", err)
		}
		n++
	}
	return n, nil
}

func (s *Spool) syncDir() error {
	d, err := os.Open(s.dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Lock is the spool's delivery lock: an exclusive flock(2) on <dir>/.lock.
// The kernel drops it when its holder exits, so a crashed deliverer never
// leaves the spool locked. A Lock belongs to the goroutine that took it.
type Lock struct {
	f *os.File
}

// Lock blocks until it holds the delivery lock. Only one Lock is held per
// spool directory at a time, across processes and within one process.
func (s *Spool) Lock() (*Lock, error) { return s.lock(0) }

// TryLock takes the delivery lock if it is free, or returns ErrLocked.
func (s *Spool) TryLock() (*Lock, error) { return s.lock(syscall.LOCK_NB) }

func (s *Spool) lock(flags int) (*Lock, error) {
	f, err := os.OpenFile(filepath.Join(s.dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|flags)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("spool lock: %w", err)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock. Calling it twice is an error.
func (l *Lock) Unlock() error {
	if l.f == nil {
		return errors.New("spool unlock: not locked")
	}
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("spool unlock: %w", err)
	}
	return nil
}

// RejectedDir is the spool's subdirectory for entries kept aside: payloads
// refused as bad input, each as <ID>.json (redacted) with <ID>.why (the
// reason, redacted).
const RejectedDir = "rejected"

// DefaultRejectedRetention is how long Sweep keeps rejected entries:
// 7 days.
const DefaultRejectedRetention = 7 * 24 * time.Hour

// MaxRejected is the most entries rejected/ keeps: each one kept aside
// past it removes the oldest, so a stream of bad payloads holds at most
// MaxRejected × 1 MiB (what an entry keeps of its payload) on disk.
const MaxRejected = 256

// Redactor is what Reject and KeepAside redact a payload kept aside
// with: adapters/claude.Redactor (redact.Redactor) satisfies it.
type Redactor interface {
	// Redact returns text with every secret replaced.
	Redact(text string) string
	// JSON redacts a JSON text over the decoded text of its strings,
	// and returns JSON when text is JSON (text redacted as Redact does
	// otherwise).
	JSON(text string) string
}

// Reject moves entry id aside into rejected/, redacted by red (over its
// decoded JSON strings when it is JSON), with why, so it no longer blocks
// the entries behind it. A missing entry is not an error.
func (s *Spool) Reject(id string, payload []byte, why error, red Redactor) error {
	if _, err := ulid.ParseStrict(id); err != nil {
		return fmt.Errorf("spool reject %q: not an entry id: %w", id, err)
	}
	if err := s.keepAside(id, payload, why, red); err != nil {
		return err
	}
	return s.Remove(id)
}

// KeepAside stores payload, which never entered the spool (it was
// refused before), in rejected/ under a new entry id, redacted by red,
// with why. It returns the id.
func (s *Spool) KeepAside(payload []byte, why error, red Redactor) (string, error) {
	id := NewID()
	return id, s.keepAside(id, payload, why, red)
}

func (s *Spool) keepAside(id string, payload []byte, why error, red Redactor) error {
	dir := filepath.Join(s.dir, RejectedDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("spool reject %s: %w", id, err)
	}
	const keep = 1 << 20 // what a rejected entry keeps of its payload
	text := strings.ToValidUTF8(string(payload), "\uFFFD")
	whyText := red.Redact(why.Error())
	if len(text) > keep {
		whyText += fmt.Sprintf(" (the payload kept beside this is its first %d of %d bytes)", keep, len(payload))
		text = red.Redact(cut.Prefix(text, keep)) // cut JSON is text
	} else {
		text = red.JSON(text)
	}
	if err := writeFileSync(filepath.Join(dir, id+".why"), []byte(whyText+"\n")); err != nil {
		return fmt.Errorf("spool reject %s: %w", id, err)
	}
	if err := writeFileSync(filepath.Join(dir, id+spoolExt), []byte(text)); err != nil {
		return fmt.Errorf("spool reject %s: %w", id, err)
	}
	return trimRejected(dir, MaxRejected)
}

// trimRejected removes the oldest entries of dir (rejected/; both files
// of each, oldest by entry id) past the newest most.
func trimRejected(dir string, most int) error {
	ents, err := os.ReadDir(dir) // sorted by name: by entry id, oldest first
	if err != nil {
		return fmt.Errorf("spool trim rejected: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), spoolExt); ok {
			if _, err := ulid.ParseStrict(id); err == nil {
				ids = append(ids, id)
			}
		}
	}
	for _, id := range ids[:max(0, len(ids)-most)] {
		for _, name := range []string{id + spoolExt, id + ".why"} {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("spool trim rejected: %w", err)
			}
		}
	}
	return nil
}

// writeFileSync writes b to path (mode 0600) and fsyncs it.
func writeFileSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SweepRejected removes rejected entries (both files) whose entry id is
// older than age at now, and returns how many entries it removed.
func (s *Spool) SweepRejected(now time.Time, age time.Duration) (int, error) {
	dir := filepath.Join(s.dir, RejectedDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("spool sweep rejected: %w", err)
	}
	n := 0
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), spoolExt)
		if !ok {
			id, ok = strings.CutSuffix(e.Name(), ".why")
		}
		u, err := ulid.ParseStrict(id)
		if !ok || err != nil || now.Sub(ulid.Time(u.Time())) < age {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("spool sweep rejected: %w", err)
		}
		if strings.HasSuffix(e.Name(), spoolExt) {
			n++
		}
	}
	return n, nil
}

// NotRecorded is the error of a hook whose payload serve did not take
// (served: why; nil when serve was not asked) and the spool could not
// keep (perr, from PutAs), e.g. "the payload is not recorded: serve did
// not take it (…), and the spool could not keep it: write …: no space
// left on device; free space on that disk". It wraps perr.
func NotRecorded(served, perr error) error {
	why := ""
	if served != nil {
		why = fmt.Sprintf("serve did not take it (%v), and ", served)
	}
	return fmt.Errorf("the payload is not recorded: %sthe spool could not keep it: %w%s", why, perr, fix(perr))
}

// fix returns what a person does about err, a spool's refusal to keep a
// payload, as a clause that closes NotRecorded's message: "; free space
// on that disk" for a full disk or a quota, "; remount it read-write"
// for a read-only file system, "" otherwise.
func fix(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "; free space on that disk"
	case errors.Is(err, syscall.EROFS):
		return "; remount it read-write"
	}
	return ""
}
