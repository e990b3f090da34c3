package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/term"
	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/cmd/logbook/internal/bench"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

func auditCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "audit SESSION|WORKSPACE",
		Short: "Print a session's audit timeline: every transition, entry, verdict and abandonment, with its cause",
		Long: `audit reads one session's events from the log and prints every transition
(from → to, activity), every entry opened, closed or abandoned, every mode
change, review request and verdict, the end, and every event of the
commands run for it (requested, started, stdin, stop, exited, abandoned …)
— each with its stream sequence, time, cause, and the observation it came
from.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sock := g.socketPath(); sock != "" {
				return auditViaSocket(cmd.Context(), g, sock, args[0])
			}
			clock := newAuditClock()
			clock.mark(bench.AuditStarted)
			stop, err := auditProfile()
			if err != nil {
				return err
			}
			defer stop()
			// A process that ends with the command leaves the
			// collector's target, the connection's drain and the log's
			// goroutines to its exit: the audit appends nothing, and
			// its output is written before it returns.
			exits := g.exits
			if restore := liveHeapGC(); !exits {
				defer restore()
			}
			// The fast path's keys are loaded while the command connects.
			keys := loadKeysAhead(g)
			b, err := openBackend(cmd.Context(), g)
			if err != nil {
				return err
			}
			if !exits {
				defer b.Close()
			}
			clock.mark(bench.AuditConnected)
			// The session id is looked up, and the read of its events
			// started (natslog.Log.StartLoad: the server loads and sends
			// its first messages), while the fast path reads its statement
			// and proves its tree: both wait on the server, neither on the
			// other (the look-up and the start read no event, judge
			// nothing; every event is judged once the fast path is set).
			resolved := make(chan resolvedID, 1)
			go func() {
				// An argument that may be a whole session id has its
				// read started while it is looked up; the start is
				// dropped when the look-up resolves it to another id.
				var ahead chan *natslog.LoadStart
				if agg := (events.Aggregate{Kind: events.KindSession, ID: args[0]}); b.log != nil && agg.Validate() == nil {
					ahead = make(chan *natslog.LoadStart, 1)
					go func() { ahead <- b.log.StartLoad(cmd.Context(), agg) }()
				}
				id, err := resolveID(cmd.Context(), b, events.KindSession, args[0])
				r := resolvedID{id: id, err: err}
				if ahead != nil {
					if s := <-ahead; err == nil && id == args[0] {
						r.start = s
					} else {
						s.Close()
					}
				}
				if err == nil && r.start == nil && b.log != nil {
					r.start = b.log.StartLoad(cmd.Context(), events.Aggregate{Kind: events.KindSession, ID: id})
				}
				resolved <- r
			}()
			b.fastPathKeys(cmd.Context(), keys)
			clock.timeChecks(b.log)
			clock.mark(bench.AuditJudgment)
			r := <-resolved
			if r.start != nil {
				defer r.start.Close()
			}
			clock.mark(bench.AuditResolved)
			items, err := auditTimeline(cmd.Context(), b, args[0], r.id, r.err, r.start, clock.mark)
			if err != nil {
				return err
			}
			if err := emitAudit(g, items); err != nil {
				return err
			}
			clock.mark(bench.AuditRendered)
			return clock.write()
		},
	}
}

// emitAudit writes the timeline as JSON with --json, else as its text
// (term.PrintAudit, as wide as stdout): run by run, with no copy of the
// whole, when stdout is no terminal (its lines whole), through one
// replay.TextWriter (which compares an observation's time with those of
// the runs before it). Errors are stdout's.
func emitAudit(g *globals, runs auditRuns) error {
	growPipe(g.stdout, auditPipeSize)
	if g.json {
		return writeJSON(g.stdout, runs.flat())
	}
	width := term.Width(g.stdout)
	if width >= 40 {
		return term.PrintAudit(g.stdout, runs.flat(), width)
	}
	// As term.PrintAudit writes to what is not a terminal, a run at a
	// time: the runs are not copied into one slice first.
	bw := bufio.NewWriterSize(g.stdout, 64<<10)
	tw := replay.TextWriter{W: bw}
	var err error
	for _, run := range runs {
		if err = tw.Write(run); err != nil {
			break
		}
	}
	return term.Flushed(err, bw)
}

// auditPipeSize is the buffer audit asks of a pipe it writes to
// (growPipe): a timeline of 20,000 events is 3 MB, which through a
// pipe's default 64 KiB waits on its reader 48 times.
const auditPipeSize = 1 << 20

// growPipe asks the kernel to make the buffer of the pipe w is (when w
// is an *os.File on a pipe) n bytes. It leaves the pipe as it was when
// it cannot (n past fs.pipe-max-size for an unprivileged user, or less
// than what the pipe holds), or when the pipe's buffer is already as
// large: the ask is only for speed.
func growPipe(w io.Writer, n int) {
	f, ok := w.(*os.File)
	if !ok {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return
		}
		if size, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err == nil && size < n {
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, n)
		}
	})
}

// liveHeapGCPercent is the garbage collector's target (GOGC) of a
// command whose heap is nearly all live until it ends: audit keeps every
// item of the timeline until it prints it, so at Go's default of 100 a
// collection at every doubling of the heap marked the same items again
// and again. At 400 an audit of 20,000 events (which then kept their
// records too) took 16% less CPU (user+sys, median of 10, 315 → 265 ms)
// and its peak RSS grew by 14% (94 → 108 MB).
const liveHeapGCPercent = 400

// firstGCPercent is the target until the first collection: its heap
// target, 80 MB (the runtime's 4 MB minimum × 20), is more than an audit
// of 20,000 events allocates (25 MB, its items live to the end; 42 MB
// when it kept the records and the read's buffers too), which so runs
// without collecting: 7% less CPU than at 400 (task-clock,
// median of 11: 148 → 138 ms), 10% fewer page faults, peak RSS 5%
// larger. A longer session's audit collects once at 80 MB and then runs
// at liveHeapGCPercent, its heap at most 5 times what is live rather
// than 21 times.
const firstGCPercent = 2000

// liveHeapGC sets the collector's target to firstGCPercent until the
// first collection and to liveHeapGCPercent after it, unless $GOGC says
// otherwise, and returns the function that sets it back (a command run
// in a test's process leaves the process as it found it).
func liveHeapGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	var mu sync.Mutex
	restored := false
	was := debug.SetGCPercent(firstGCPercent)
	// A sentinel freed at the first collection lowers the target; its
	// finalizer runs on the runtime's finalizer goroutine.
	sentinel := new([16]byte)
	runtime.SetFinalizer(sentinel, func(*[16]byte) {
		mu.Lock()
		defer mu.Unlock()
		if !restored {
			debug.SetGCPercent(liveHeapGCPercent)
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		restored = true
		debug.SetGCPercent(was)
	}
}

// auditItems returns the audit timeline of session (an id or a unique
// prefix) or, when no session has that id, of the workspace named so:
// every event, with the ones the log could not attest in their place.
func auditItems(ctx context.Context, b *backend, arg string) ([]replay.Item, error) {
	id, err := resolveID(ctx, b, events.KindSession, arg)
	runs, err := auditTimeline(ctx, b, arg, id, err, nil, nil)
	return runs.flat(), err
}

// resolvedID is resolveID's answer and, when it resolved, the read of
// the session's events started (nil: none).
type resolvedID struct {
	id    string
	err   error
	start *natslog.LoadStart
}

// auditTimeline is auditItems once arg is resolved (resolveID's id and
// err), the timeline in runs (sessionAudit), its read going on from
// start when not nil (natslog.Log.StartLoad of the session id): it calls
// mark (when not nil) with the name of each of worker.SessionAudit's
// stages as it ends.
func auditTimeline(ctx context.Context, b *backend, arg, id string, err error, start *natslog.LoadStart, mark func(stage string)) (auditRuns, error) {
	var nf *notFoundError
	if errors.As(err, &nf) {
		// Not a session: a workspace's whole life, if it is one.
		wi, werr := wsadapter.Timeline(ctx, b.log, arg)
		if werr == nil {
			return auditRuns{wi}, nil
		}
		if errors.Is(werr, events.ErrNotFound) {
			return nil, &notFoundError{msg: fmt.Sprintf("%q not found: neither a session nor a workspace has that id (see `logbook sessions --all`, `logbook workspace list`)", arg)}
		}
	}
	if err != nil {
		return nil, err
	}
	// The log left the events it could not attest out of the timeline:
	// each is shown, in its place, as unattested.
	return sessionAudit(ctx, b.log, id, start, func() []replay.Unattested { return unattested(b.log, "") }, mark)
}

// auditProfileEnv names the environment variable through which audit
// writes a CPU profile of itself (runtime/pprof, for go tool pprof) to
// the file it names, from the command's start to the timeline written;
// unset (the default), none is taken.
const auditProfileEnv = "LOGBOOK_AUDIT_CPUPROFILE"

// auditProfile starts the CPU profile $LOGBOOK_AUDIT_CPUPROFILE asks for
// and returns the function that stops it and closes its file (a no-op
// when none is asked for). Errors name the variable and the file.
func auditProfile() (stop func(), err error) {
	path := os.Getenv(auditProfileEnv)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("$%s: %w", auditProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("$%s: %w", auditProfileEnv, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// auditClock notes when each stage of an audit ended, for the bench's
// breakdown of its audit row, when $LOGBOOK_AUDIT_STAGES
// (bench.AuditStagesEnv) names a file: write puts the marks there, one
// line each, "<stage> <unix time in ns>", and one line
// "verified <ns>" with the time the fast path's leaf checks took, summed
// over goroutines, and one "peak-resident <KiB>" with the process's peak
// resident set (VmHWM) when it writes them. A nil *auditClock (the
// variable unset) notes nothing.
type auditClock struct {
	path     string
	marks    []string
	verified atomic.Int64 // ns
}

// newAuditClock returns the audit's clock, nil unless
// $LOGBOOK_AUDIT_STAGES is set.
func newAuditClock() *auditClock {
	path := os.Getenv(bench.AuditStagesEnv)
	if path == "" {
		return nil
	}
	return &auditClock{path: path}
}

// mark notes that stage ended now. Not safe for concurrent use.
func (c *auditClock) mark(stage string) {
	if c == nil {
		return
	}
	c.marks = append(c.marks, fmt.Sprintf("%s %d\n", stage, time.Now().UnixNano()))
}

// timeChecks makes l's fast path (when it has one) time each leaf check
// into c.verified.
func (c *auditClock) timeChecks(l *natslog.Log) {
	if c == nil || l == nil {
		return
	}
	j := l.Judgment()
	if j == nil {
		return
	}
	timed, check := *j, j.Check
	timed.Check = func(m natslog.Msg) error {
		t := time.Now()
		err := check(m)
		c.verified.Add(int64(time.Since(t)))
		return err
	}
	l.SetJudged(&timed)
}

// write writes the marks to the clock's file, replacing it. Errors name
// the variable and the file.
func (c *auditClock) write() error {
	if c == nil {
		return nil
	}
	out := strings.Join(c.marks, "") + fmt.Sprintf("%s %d\n", bench.AuditVerified, c.verified.Load())
	if kib, ok := peakResidentKiB(); ok {
		out += fmt.Sprintf("%s %d\n", bench.AuditPeakResident, kib)
	}
	if err := os.WriteFile(c.path, []byte(out), 0o600); err != nil {
		return fmt.Errorf("$%s: %w", bench.AuditStagesEnv, err)
	}
	return nil
}

// peakResidentKiB returns the process's peak resident set so far in KiB,
// VmHWM of /proc/self/status; false where that cannot be read.
func peakResidentKiB() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		v, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		return kib, err == nil
	}
	return 0, false
}
