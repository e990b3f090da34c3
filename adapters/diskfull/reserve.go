package diskfull

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of Reserve, in bytes.
const (
	// MinReserve is the least reserve, 16 MiB: room for the two merged
	// atomic batches a log has in flight (natslog.MaxMergeBytes each,
	// each staged in a store of its own and then stored). Measured: with
	// 4 MiB (and batches of 1 MiB) an import that filled a 64 MiB disk on
	// a loaded 2-core machine still cut a batch, 1 run in 4.
	MinReserve = 16 << 20
	// MaxReserve is the most, 64 MiB: on a large disk a sixteenth
	// would keep gigabytes from use.
	MaxReserve = 64 << 20
)

// GuardEvery is how often a Guard looks at the free space under the
// log's store: often, since the log's own appends may be what fills it.
const GuardEvery = 50 * time.Millisecond

// Reserve returns the free space, in bytes, under which a Guard holds
// the appends of the log stored in dir: a sixteenth of the size of the
// file system dir is on, at least MinReserve and at most MaxReserve.
// Errors are statfs(2)'s.
func Reserve(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return reserveFor(int64(st.Blocks) * int64(st.Bsize)), nil
}

// reserveFor is the Reserve of a file system of size bytes.
func reserveFor(size int64) int64 { return min(max(size/16, MinReserve), MaxReserve) }

// Room returns a natslog.Config.Room for a log whose store lies in dir:
// nil while the file system there has room, else an error saying how
// much is free and the reserve. Room is held once less than the Reserve
// is free, and let go once a quarter more than the Reserve is free
// again; every Room and Guard of this process on the same dir share
// that state, so that what serve says (the Guard's pause) is what its
// writers do. A writer on the store's host asks it before each commit,
// so that no commit starts that the disk could cut, whenever the
// Guard's look comes.
func Room(dir string) func() error {
	r := reserveOf(dir)
	return func() error {
		held, left, reserve, err := r.look()
		if err != nil || !held {
			return nil // not known: the Guard and the store say what they find
		}
		if left < reserve {
			return fmt.Errorf("%d bytes free under %s, under the log's reserve of %d MiB", left, dir, reserve>>20)
		}
		return fmt.Errorf("%d bytes free under %s, held until a quarter more than the log's reserve of %d MiB is free", left, dir, reserve>>20)
	}
}

// Shortfall is how the disk under a log's store stands against its
// Reserve, in bytes: Free (to an unprivileged writer), the Reserve, and
// the Size of the whole file system.
type Shortfall struct {
	Free, Reserve, Size int64
}

// ShortOf returns how the disk under the log's store dir stands against
// its Reserve, and whether less than the Reserve is free there: what a
// writer that could not start (its appends held, Room) says. It reports
// false when the Reserve is free, or when statfs(2) fails.
func ShortOf(dir string) (Shortfall, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Shortfall{}, false
	}
	size := int64(st.Blocks) * int64(st.Bsize)
	s := Shortfall{Free: int64(st.Bavail) * int64(st.Bsize), Reserve: reserveFor(size), Size: size}
	return s, s.Free < s.Reserve
}

// reserves holds the held state of each store directory this process
// looks at, by its cleaned path.
var reserves sync.Map // string → *reserve

// reserve is the held state of the free space under one store directory.
type reserve struct {
	dir  string
	mu   sync.Mutex
	held bool
}

// reserveOf returns the shared state of dir.
func reserveOf(dir string) *reserve {
	dir = filepath.Clean(dir)
	r, _ := reserves.LoadOrStore(dir, &reserve{dir: dir})
	return r.(*reserve)
}

// look reads the free space under r's directory and the Reserve, and
// returns whether the log's appends are held: less than the Reserve is
// free, or they were held and less than a quarter more than it is free.
// Errors are statfs(2)'s; they leave the state as it was.
func (r *reserve) look() (held bool, left, reserve int64, err error) {
	if reserve, err = Reserve(r.dir); err != nil {
		return false, 0, 0, err
	}
	if left, err = free(r.dir); err != nil {
		return false, 0, 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = left < reserve || r.held && left < reserve+reserve/4
	return r.held, left, reserve, nil
}

// free returns the bytes free to an unprivileged writer under dir.
func free(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Guard tells, as a pause of serve's writes (Pause), when the disk
// under a log's store has less than its Reserve free, and when it has a
// quarter more than that again: when the Room of its Dir is held, and
// when it is let go. A single NATS server commits an atomic
// batch message by message (nats-server v2.15, non-clustered), so a disk
// that fills part way through a commit leaves the batch cut: its first
// messages stored, the rest not, though the publisher is told it
// failed. The log's writers on the host therefore start no commit under
// the reserve (Room, natslog.Config.Room); the Guard says that they do
// not. The reserve covers the
// commits in flight; a disk filled at once by another program can still
// cut a batch being committed at that moment.
type Guard struct {
	// Dir is the log's store (the embedded server's jetstream/).
	Dir string

	mu    sync.Mutex // one look at a time
	held  bool       // what the last look said (the Room of g.Dir says the same)
	known bool       // a look said it
}

// watch looks at g.Dir's free space every GuardEvery until ctx is done,
// pausing p (so that serve says why) while it is under the reserve.
func (g *Guard) watch(ctx context.Context, p *Pause) {
	t := time.NewTicker(GuardEvery)
	defer t.Stop()
	for {
		g.look(ctx, p)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// First makes g's first look now, before Watch runs it, so that serve
// says a disk under the reserve from its start. Watch then goes on from
// what it found.
func (g *Guard) First(ctx context.Context, p *Pause) { g.look(ctx, p) }

// look is one look of g: it pauses p, or ends g's pause, when what it
// finds differs from what it last found (or at the first).
func (g *Guard) look(ctx context.Context, p *Pause) {
	g.mu.Lock()
	defer g.mu.Unlock()
	want, left, reserve, err := reserveOf(g.Dir).look()
	if err != nil || ctx.Err() != nil {
		return
	}
	if g.known && want == g.held {
		if want {
			p.restate(g.Dir, heldWhy(left, reserve)) // the free space now, not at the start
		}
		return
	}
	if want {
		p.hold(g.Dir, heldWhy(left, reserve))
	} else if g.known {
		p.unhold(g.Dir)
	}
	g.held, g.known = want, true
}

// heldWhy is the reason of a Guard's pause: left bytes free, under (or
// not yet far enough above) the reserve.
func heldWhy(left, reserve int64) string {
	if left < reserve {
		return fmt.Sprintf("%d bytes free, under the log's reserve of %d MiB: appends are held so that no atomic batch is cut by a full disk", left, reserve>>20)
	}
	return fmt.Sprintf("%d bytes free, not yet a quarter above the log's reserve of %d MiB: appends are held so that no atomic batch is cut by a full disk", left, reserve>>20)
}
