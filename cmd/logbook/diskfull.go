package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/api"
)

// A full disk (or one remounted read-only) pauses serve's writes; it does
// not stop serve. What each part does while the disk refuses writes:
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
//
// diskPause is what serve tells of it: doctor (the disk verb) and
// /metrics show "appends paused: disk full since <time>".

// diskWatchEvery is how often serve probes the parts of its data dir.
const diskWatchEvery = 500 * time.Millisecond

// diskMinFree is the free space under which a part counts as full.
const diskMinFree = 256 << 10

// diskPause records since when, and where, the disk refuses writes. Safe
// for concurrent use.
type diskPause struct {
	mu    sync.Mutex
	since time.Time // zero while writes go on
	dir   string
	why   string
	logf  func(format string, args ...any)
	stop  chan struct{} // closed when serve stops: waits in the views end
	once  sync.Once
}

func newDiskPause(logf func(format string, args ...any)) *diskPause {
	return &diskPause{logf: logf, stop: make(chan struct{})}
}

// set marks the disk of dir full for why, from now unless it is already.
func (p *diskPause) set(dir, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.since.IsZero() {
		return
	}
	p.since, p.dir, p.why = time.Now().UTC(), dir, why
	p.logf("appends paused: disk full since %s (%s: %s); hooks wait in the journal and go in, in order, once it takes writes", p.since.Format(time.RFC3339), dir, why)
}

// clear marks writes going on again.
func (p *diskPause) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.since.IsZero() {
		return
	}
	p.logf("appends resumed: %s takes writes again after %s", p.dir, time.Since(p.since).Round(time.Millisecond))
	p.since, p.dir, p.why = time.Time{}, "", ""
}

// Since returns when the pause began (zero when there is none), where
// and why.
func (p *diskPause) Since() (time.Time, string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.since, p.dir, p.why
}

// String is "appends paused: disk full since <RFC 3339 time> (<dir>:
// <why>)", or "" when writes go on.
func (p *diskPause) String() string {
	since, dir, why := p.Since()
	if since.IsZero() {
		return ""
	}
	return fmt.Sprintf("appends paused: disk full since %s (%s: %s)", since.Format(time.RFC3339), dir, why)
}

// close ends the waits of the views' writes (serve is stopping).
func (p *diskPause) close() { p.once.Do(func() { close(p.stop) }) }

// probeDir reports why dir's file system does not take writes now, or
// "" if it does: read-only, less than diskMinFree free, or a probe file
// (64 KiB, fsynced, removed) refused.
func probeDir(dir string, write bool) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		if os.IsNotExist(err) {
			return ""
		}
		return err.Error()
	}
	if st.Flags&unix.ST_RDONLY != 0 {
		return "read-only file system"
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < diskMinFree {
		return fmt.Sprintf("%d bytes free", free)
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

// watch probes dirs every diskWatchEvery until ctx ends: a part that is
// full or read-only pauses, and once every part takes a probe write the
// pause ends.
func (p *diskPause) watch(ctx context.Context, dirs []string) {
	t := time.NewTicker(diskWatchEvery)
	defer t.Stop()
	for {
		since, _, _ := p.Since()
		paused := !since.IsZero()
		var dir, why string
		for _, d := range dirs {
			if why = probeDir(d, paused); why != "" {
				dir = d
				break
			}
		}
		switch {
		case why != "":
			p.set(dir, why)
		case paused:
			p.clear()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// viewsFS returns the file system for Pebble's views in dir: the
// operating system's, with a write that fails for want of space held
// until dir takes a probe write again (then Pebble makes it again),
// instead of failing Pebble for good. The wait ends early when serve
// stops.
func (p *diskPause) viewsFS(dir string) vfs.FS {
	return vfs.OnDiskFull(vfs.Default, func() {
		p.set(dir, "no space left on device (views)")
		for {
			if probeDir(dir, true) == "" {
				return
			}
			select {
			case <-p.stop:
				return
			case <-time.After(diskWatchEvery):
			}
		}
	})
}

// diskFullError reports whether err is a file system refusing writes:
// no space, over quota, read-only, or an I/O error; JetStream's errors
// carry only the text.
func diskFullError(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO} {
		if errors.Is(err, e) {
			return true
		}
	}
	s := err.Error()
	return strings.Contains(s, "no space left on device") || strings.Contains(s, "read-only file system")
}

// pausedSince is diskPause.Since's time for /metrics
// (logbook_appends_paused_since_seconds); zero outside serve.
func (b *backend) pausedSince() time.Time {
	if b.pause == nil {
		return time.Time{}
	}
	since, _, _ := b.pause.Since()
	return since
}

// verbDisk is serve's API verb that answers a diskReply: what doctor
// shows of a full disk.
const verbDisk = "disk"

// diskReply is verbDisk's answer: Paused is diskPause.String ("" while
// appends go on).
type diskReply struct {
	Paused string `json:"paused,omitempty"`
}

// diskPaused asks the server b talks to whether its appends are paused
// by a full disk: diskPause.String, or "" (not paused, no server, a
// server that does not answer within 2 s or knows no disk verb).
func (b *backend) diskPaused(ctx context.Context) string {
	if b == nil || !b.remote || b.api == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var r diskReply
	if err := api.Call(ctx, b.nc, b.api, verbDisk, struct{}{}, &r); err != nil {
		return ""
	}
	return r.Paused
}
