package natslog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// The store on a file system that fills up and is freed again: appends
// fail while it is full and go on once it is freed, without a restart of
// the process; every append acknowledged before, during and after is in
// the log once, and the aggregate's versions have no gap. JetStream holds
// a write error for good (until its restart); the embedded Server clears
// it (see HealStore).
func TestDiskFullStoreRecovers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a full disk is a tmpfs mounted for the test: needs root")
	}
	if raceEnabled {
		// Each write error is cleared by a restart of JetStream
		// (HealStore), where nats-server 2.15.3 races with itself (see
		// TestReadsAcrossJetStreamRestarts).
		t.Skip("restarts JetStream: nats-server races in EnableJetStream")
	}
	t.Parallel() // a server and tmpfs of its own; it mostly waits out failed appends
	for _, left := range []int{0, 1 << 10, 8 << 10} {
		t.Run(fmt.Sprint(left), func(t *testing.T) {
			t.Parallel() // each its own tmpfs and server
			dir := t.TempDir()
			if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8388608,mode=0700"); err != nil {
				t.Skipf("mount tmpfs: %v", err)
			}
			t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
			s := startServer(t, filepath.Join(dir, "js"))
			l, err := Open(t.Context(), s.Conn(), Config{Timeout: 500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			reg := events.NewRegistry()
			agg := session("full")
			var seq, ver uint64 // the aggregate's last event: its stream sequence, its version
			acked := map[string]bool{}
			appendN := func(n int) error {
				b := decision(reg, agg, seq, ver+1, n)
				app, err := l.Append(t.Context(), b)
				if err != nil {
					return err
				}
				seq, ver = app.Last, ver+uint64(n)
				for _, e := range b.Events {
					acked[e.ID.String()] = true
				}
				return nil
			}
			for i := range 20 {
				if err := appendN(1 + i%3); err != nil {
					t.Fatal(err)
				}
			}
			filler := filepath.Join(dir, "filler")
			f, err := os.Create(filler)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1 << 20, 4 << 10, 512, 1} {
				buf := make([]byte, n)
				for {
					if _, err := f.Write(buf); err != nil {
						break
					}
				}
			}
			fi, err := f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(fi.Size() - int64(left)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			var failed int
			for i := range 30 {
				if err := appendN(1 + i%3); err != nil {
					// An outcome unknown may be stored: learn the
					// aggregate's last event from the log before the
					// next decision.
					seq, ver = aggLast(t, l, agg)
					failed++
				}
			}
			if failed == 0 {
				t.Fatal("no append failed on the full disk: the test filled nothing")
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for ok := 0; ok < 10; {
				if err := appendN(1 + ok%3); err != nil {
					if time.Now().After(deadline) {
						t.Fatalf("appends do not go on after the disk was freed: %v", err)
					}
					if errors.Is(err, events.ErrConflict) || errors.Is(err, ErrUnknownOutcome) {
						seq, ver = aggLast(t, l, agg)
					}
					time.Sleep(100 * time.Millisecond)
					continue
				}
				ok++
			}
			want := checkAcked(t, l, acked)
			t.Logf("%d of 30 appends failed while full; %d events acknowledged, %d in the log", failed, len(acked), want)
		})
	}
}

// aggLast reads the log for agg's last event: its stream sequence, which
// the next decision expects, and its version. The two part after a write
// error: JetStream, recovering from its files a stream whose last
// messages never reached the disk, keeps the last sequence it had handed
// out (nats-server 2.15 filestore.go newFileStoreWithCreatedAndMode, "prior
// state"), and the next event is stored after a gap.
//
// A read that fails (a request past the Log's short Timeout on a loaded
// machine) is made again, for 10 s at most.
func aggLast(t *testing.T, l *Log, agg events.Aggregate) (seq, ver uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		seq, ver = 0, 0
		var rerr error
		for r, err := range l.Read(t.Context(), 1) {
			if err != nil {
				rerr = err
				break
			}
			if r.Agg == agg {
				seq, ver = r.Seq, r.Ver
			}
		}
		if rerr == nil {
			return seq, ver
		}
		if time.Now().After(deadline) {
			t.Fatal(rerr)
		}
		t.Logf("read %s's last event again after: %v", agg, rerr)
		time.Sleep(100 * time.Millisecond)
	}
}

// A store whose last record never reached the disk (a write error, a
// crash) recovers with the last sequence it had handed out: the
// aggregate's next event is stored after a gap, its version one past
// the last event read and its sequence two past. The next decision
// expects the last event's sequence, as Load and Read return it, and
// goes on; one that expected its version (which equals the sequence
// until then) would be a conflict for good. The tail is cut from the
// block file of a server shut down, as the failed write left it.
func TestAppendAfterLostTail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "js")
	s := startServer(t, dir)
	l := openLog(t, s)
	reg := events.NewRegistry()
	agg := session("lost-tail")
	appendAt := func(seq, ver uint64) events.Appended {
		t.Helper()
		return mustAppend(t, l, decision(reg, agg, seq, ver+1, 1))
	}
	for v := range uint64(10) {
		appendAt(v, v)
	}
	l.Close()
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	blks, err := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams", StreamName, "msgs", "*.blk"))
	if err != nil || len(blks) != 1 {
		t.Fatalf("block files %v: %v", blks, err)
	}
	fi, err := os.Stat(blks[0])
	if err != nil {
		t.Fatal(err)
	}
	// The last record's checksum: recovery drops the torn record.
	if err := os.Truncate(blks[0], fi.Size()-4); err != nil {
		t.Fatal(err)
	}
	s = startServer(t, dir)
	l = openLog(t, s)
	seq, ver := aggLast(t, l, agg)
	if seq != 9 || ver != 9 {
		t.Fatalf("after the lost tail the aggregate's last event is at sequence %d, version %d; want 9, 9", seq, ver)
	}
	if last := lastSeq(t, l); last != 10 {
		t.Fatalf("the stream's last sequence %d after the lost tail, want 10 (JetStream keeps it)", last)
	}
	app := appendAt(seq, ver)
	if app.Last != 11 {
		t.Fatalf("the event after the lost tail stored at sequence %d, want 11", app.Last)
	}
	if seq, ver = aggLast(t, l, agg); seq != 11 || ver != 10 {
		t.Fatalf("the aggregate's last event at sequence %d, version %d; want 11, 10", seq, ver)
	}
	// Expecting the version, as if it were the sequence, is a conflict.
	if _, err := l.Append(t.Context(), decision(reg, agg, ver, ver+1, 1)); !errors.Is(err, events.ErrConflict) {
		t.Fatalf("append expecting the version %d: %v, want a conflict", ver, err)
	}
	appendAt(seq, ver)
}

// A server started on a nearly full disk: the log fills the rest, and
// once space is freed, or the file system grown, it takes appends again,
// past what was free when it started, without a restart of the process. JetStream would otherwise
// limit the store to three quarters of the space free at its start (and
// keep that limit across the restarts that clear a write error), and
// refuse every append with "insufficient resources" for good.
func TestDiskFullStartedNearlyFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a full disk is a tmpfs mounted for the test: needs root")
	}
	if raceEnabled {
		// Each write error is cleared by a restart of JetStream
		// (HealStore), where nats-server 2.15.3 races with itself (see
		// TestReadsAcrossJetStreamRestarts).
		t.Skip("restarts JetStream: nats-server races in EnableJetStream")
	}
	t.Parallel()
	for _, grow := range []bool{false, true} {
		t.Run(map[bool]string{false: "freed", true: "grown"}[grow], func(t *testing.T) {
			t.Parallel()
			startedNearlyFull(t, grow)
		})
	}
}

// startedNearlyFull is TestDiskFullStartedNearlyFull with space made by
// removing a file, or (grow) by growing the file system (a tmpfs
// remounted larger, as resize2fs grows a disk).
func startedNearlyFull(t *testing.T, grow bool) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8388608,mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 6<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(dir, "js"))
	l, err := Open(t.Context(), s.Conn(), Config{Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	reg := events.NewRegistry()
	agg := session("nearly-full")
	var seq, ver uint64 // the aggregate's last event: its stream sequence, its version
	acked := map[string]bool{}
	var count int
	appendN := func(n int) error {
		b := decision(reg, agg, seq, ver+1, n)
		app, err := l.Append(t.Context(), b)
		if err != nil {
			return err
		}
		seq, ver = app.Last, ver+uint64(n)
		for _, e := range b.Events {
			acked[e.ID.String()] = true
		}
		count += n
		return nil
	}
	full := false
	for range 2000 {
		if err := appendN(100); err != nil {
			full = true
			seq, ver = aggLast(t, l, agg)
			break
		}
	}
	if !full {
		t.Fatal("the disk never filled")
	}
	before := count
	if grow {
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size=33554432,mode=0700"); err != nil {
			t.Skipf("remount tmpfs larger: %v", err)
		}
	} else if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Past what was free at the start: twice as many events again as
	// filled it; grown, past the file system's size at the start too.
	target := 3 * before
	if grow {
		target = 5 * before
	}
	freed := time.Now()
	deadline := freed.Add(30 * time.Second)
	var errs []string // each failed append since, with when
	for count < target {
		if err := appendN(100); err != nil {
			errs = append(errs, fmt.Sprintf("%v: %v", time.Since(freed).Round(time.Millisecond), err))
			if time.Now().After(deadline) {
				for i, e := range errs {
					if i < 10 || i >= len(errs)-10 {
						t.Logf("failed append %d of %d: %s", i+1, len(errs), e)
					}
				}
				if last, lerr := l.LastSeq(t.Context()); lerr == nil {
					aseq, aver := aggLast(t, l, agg)
					t.Logf("the stream's last sequence %d, the aggregate's last event read at sequence %d, version %d, JetStream restarts %d", last, aseq, aver, s.restarts.Load()/2)
				}
				if v, verr := s.ns.Varz(nil); verr == nil && v.JetStream.Stats != nil && v.JetStream.Config != nil {
					t.Logf("JetStream store: %d bytes used of %d", v.JetStream.Stats.Store, v.JetStream.Config.MaxStore)
				}
				t.Fatalf("appends do not go on after the disk was freed (%d events acknowledged before, %d since): %v", before, count-before, err)
			}
			seq, ver = aggLast(t, l, agg)
			time.Sleep(50 * time.Millisecond)
		}
	}
	checkAcked(t, l, acked)
}

// checkAcked reads l, whose events are one aggregate's: their versions
// must run 1, 2, … with no gap, and each event id in acked must be
// there exactly once. It returns how many events l holds.
func checkAcked(t *testing.T, l *Log, acked map[string]bool) uint64 {
	t.Helper()
	seen := map[string]int{}
	var want uint64
	for r, err := range l.Read(t.Context(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if want++; r.Ver != want {
			t.Fatalf("version %d at sequence %d, want %d", r.Ver, r.Seq, want)
		}
		seen[r.ID.String()]++
	}
	for id := range acked {
		if seen[id] != 1 {
			t.Errorf("acknowledged event %s is in the log %d times", id, seen[id])
		}
	}
	return want
}
