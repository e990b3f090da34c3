// Package diskfull tells when the disk under a data dir refuses writes,
// and holds Pebble's writes until it takes them again. A full disk (or
// one remounted read-only) pauses serve's writes; it does not stop serve.
// What each part does while the disk refuses writes:
//   - JetStream's store refuses the append (the publish's error, or an
//     atomic batch "incomplete"); nothing is acknowledged, and the hook
//     intake keeps the hook in its journal and appends it again, after
//     the ones taken before it, once the store takes writes (the
//     journal's space is written beforehand, so it takes hooks while the
//     store cannot).
//   - Pebble's views: a failed write to its write-ahead log would leave
//     Pebble unusable ("fatal commit error"); the views' file system
//     (vfs.OnDiskFull) instead holds Pebble's writes until the directory
//     takes a probe write, then Pebble's write is made again.
//   - A hook that can neither reach the journal nor the spool is not
//     acknowledged: the agent sees the error.
//   - Before the disk under the log's store is full, below a reserve of
//     free space, the log's writers on the host start no commit (Room),
//     so that no atomic batch is cut by a disk that fills during its
//     commit; a Guard says so, as a pause.
//
// A Pause is what serve tells of it: doctor (the disk verb) and
// /metrics show "appends paused: disk full since <time>".
package diskfull

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// WatchEvery is how often Watch probes its directories, and how often a
// held write of ViewsFS probes its directory.
const WatchEvery = 500 * time.Millisecond

// MinFree is the free space under which a directory's file system counts
// as full, in bytes (256 KiB).
const MinFree = 256 << 10

// Pause records since when, and where, the disk refuses writes. Create
// one with NewPause; safe for concurrent use. Its owner calls Close when
// serve stops.
type Pause struct {
	mu    sync.Mutex
	since time.Time // zero while writes go on
	dir   string
	why   string
	held  bool // a Guard holds the log's appends (a pause Clear keeps)
	logf  func(format string, args ...any)
	stop  chan struct{} // closed when serve stops: waits in the views end
	once  sync.Once
}

// NewPause returns a Pause that says on logf (printf-style, one line
// without a newline, called with the Pause's lock held) when writes pause
// (a fault: the line begins "WARN: ", servelog's marker) and resume.
func NewPause(logf func(format string, args ...any)) *Pause {
	return &Pause{logf: logf, stop: make(chan struct{})}
}

// Set marks the disk of dir full for why, from now (UTC) unless it is
// already.
func (p *Pause) Set(dir, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(dir, why)
}

// setLocked is Set with p.mu held.
func (p *Pause) setLocked(dir, why string) {
	if !p.since.IsZero() {
		return
	}
	p.since, p.dir, p.why = time.Now().UTC(), dir, why
	p.logf("WARN: appends paused: disk full since %s (%s: %s); hooks wait in the journal and go in, in order, once it takes writes", p.since.Format(time.RFC3339), dir, why)
}

// Clear marks writes going on again, unless a Guard holds the log's
// appends (then its own look ends the pause).
func (p *Pause) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		return
	}
	p.clearLocked()
}

// hold marks the log's appends held by a Guard on dir for why, and the
// writes paused from now unless they are already.
func (p *Pause) hold(dir, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
	p.setLocked(dir, why)
}

// restate replaces the reason of the pause the Guard on dir holds with
// why (the free space now), saying nothing: the pause goes on.
func (p *Pause) restate(dir, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held && p.dir == dir && !p.since.IsZero() {
		p.why = why
	}
}

// unhold marks the log's appends let go by the Guard on dir, and the
// pause over when it was the Guard's (a full part's pause goes on until
// Watch's probes clear it).
func (p *Pause) unhold(dir string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = false
	if p.dir == dir {
		p.clearLocked()
	}
}

// clearLocked is Clear with p.mu held and no Guard holding.
func (p *Pause) clearLocked() {
	if p.since.IsZero() {
		return
	}
	p.logf("appends resumed: %s takes writes again after %s", p.dir, time.Since(p.since).Round(time.Millisecond))
	p.since, p.dir, p.why = time.Time{}, "", ""
}

// Since returns when the pause began (zero when there is none), where
// and why.
func (p *Pause) Since() (time.Time, string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.since, p.dir, p.why
}

// String is "appends paused: disk full since <RFC 3339 time> (<dir>:
// <why>)", or "" when writes go on.
func (p *Pause) String() string {
	since, dir, why := p.Since()
	if since.IsZero() {
		return ""
	}
	return fmt.Sprintf("appends paused: disk full since %s (%s: %s)", since.Format(time.RFC3339), dir, why)
}

// Close ends the waits of the views' writes (serve is stopping). It is
// idempotent.
func (p *Pause) Close() { p.once.Do(func() { close(p.stop) }) }

// Probe reports why dir's file system does not take writes now, or ""
// if it does (or dir does not exist): read-only, less than MinFree free,
// or, with write, a probe file (64 KiB, fsynced, removed) refused.
func Probe(dir string, write bool) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		if os.IsNotExist(err) {
			return ""
		}
		return err.Error()
	}
	if st.Flags&unix.ST_RDONLY != 0 {
		return ReadOnly
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free == 0 {
		return "0 bytes free"
	} else if free < MinFree {
		return fmt.Sprintf("%d bytes free, under the %d KiB it needs", free, MinFree>>10)
	}
	if !write {
		return ""
	}
	f, err := os.CreateTemp(dir, ".probe-")
	if err != nil {
		return err.Error()
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.Write(make([]byte, 64<<10)); err != nil {
		return err.Error()
	}
	if err := f.Sync(); err != nil {
		return err.Error()
	}
	return ""
}

// Remedy returns what a person does about a part of the data dir that
// takes no writes, for Probe's reason why: remount a read-only file
// system read-write; otherwise free space there (the other reasons are
// free space, or an error of the file system's that freeing space may
// mend).
func Remedy(why string) string {
	if why == ReadOnly {
		return "remount it read-write"
	}
	return "free space there"
}

// ReadOnly is Probe's reason for a directory on a read-only file system.
const ReadOnly = "read-only file system"

// Watch probes dirs every WatchEvery until ctx ends: a part that is full
// or read-only pauses (Set), and once every part takes a probe write the
// pause ends (Clear). With g not nil it also runs g's look, whose hold
// pauses too. It blocks until ctx is done.
func (p *Pause) Watch(ctx context.Context, dirs []string, g *Guard) {
	if g != nil {
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			g.watch(ctx, p)
		}()
	}
	t := time.NewTicker(WatchEvery)
	defer t.Stop()
	for {
		since, _, _ := p.Since()
		paused := !since.IsZero()
		var dir, why string
		for _, d := range dirs {
			if why = Probe(d, paused); why != "" {
				dir = d
				break
			}
		}
		switch {
		case why != "":
			p.Set(dir, why)
		case paused:
			p.Clear()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ViewsFS returns the file system for Pebble's views in dir: the
// operating system's, with a write that fails for want of space held
// until dir takes a probe write again (then Pebble makes it again),
// instead of failing Pebble for good. The wait ends early at Close.
func (p *Pause) ViewsFS(dir string) vfs.FS {
	return vfs.OnDiskFull(vfs.Default, func() {
		p.Set(dir, "no space left on device (views)")
		for {
			if Probe(dir, true) == "" {
				return
			}
			select {
			case <-p.stop:
				return
			case <-time.After(WatchEvery):
			}
		}
	})
}
