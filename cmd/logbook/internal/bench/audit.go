package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/logbook-dev/logbook/adapters/worker"
)

// AuditStagesEnv names the environment variable through which the audit
// row asks `logbook audit` where its time went: when it names a file,
// audit writes there, as it exits, one line per stage it ended,
// "<stage> <unix time in ns>" (stage one of the Audit* marks), and one
// "<AuditVerified> <ns>" line with the time spent checking messages
// against the fast path's proven tree, summed over the goroutines that
// checked them, and, where the system says it, one
// "<AuditPeakResident> <KiB>" line with the process's peak resident set
// so far. Unset (the default): audit times nothing.
const AuditStagesEnv = "LOGBOOK_AUDIT_STAGES"

// The marks `logbook audit` writes (AuditStagesEnv), each when a stage
// ends; SessionAudit's own stages are worker.AuditSessionRead,
// worker.AuditCommandsFound and worker.AuditFolded.
const (
	AuditStarted   = "started"   // the command runs: process, runtime and flags are up
	AuditConnected = "connected" // connected to serve, log opened
	AuditJudgment  = "judgment"  // fast path taken or refused (merkle.UseFastPath)
	AuditResolved  = "resolved"  // the session id is resolved
	AuditRendered  = "rendered"  // the timeline is written to stdout
	// AuditVerified is not a mark but a duration: the time the fast
	// path's leaf checks took, summed over goroutines.
	AuditVerified = "verified"
	// AuditPeakResident is not a mark but a size: the audit process's
	// peak resident set (VmHWM) in KiB, read as it writes the file. The
	// wait's rusage cannot say it: a child forked from a large process
	// reports that process's peak until it execs.
	AuditPeakResident = "peak-resident"
)

// auditStages are the stages of the audit row's breakdown, in order:
// each mark and the stage it ends, timed from the mark before it (the
// first from the process's start, "" the process's exit).
var auditStages = []struct{ mark, stage string }{
	{AuditStarted, "process start: runtime, flags"},
	{AuditConnected, "connect to serve, open the log"},
	{AuditJudgment, "fast path: judgment statement read, stored tree proven"},
	{AuditResolved, "session id resolved"},
	{worker.AuditSessionRead, "the session's events read, decoded and verified"},
	{AuditVerified, "  of which: leaf hashes checked (summed over goroutines)"},
	{worker.AuditCommandsFound, "its commands and notifications found (looked for during the read)"},
	{worker.AuditFolded, "commands read, timeline folded"},
	{AuditRendered, "timeline rendered and written"},
	{"", "process exit"},
}

// auditTimes is one audit process's breakdown: when it started and
// exited, and what it wrote to its AuditStagesEnv file.
type auditTimes struct {
	begin, end time.Time
	marks      map[string]time.Time
	verified   time.Duration
	peakKiB    int64 // AuditPeakResident; 0: not said
}

// readAuditTimes parses the file an audit process wrote (AuditStagesEnv)
// into t. Errors name the file and the line.
func readAuditTimes(path string, t *auditTimes) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("audit stages: %w", err)
	}
	t.marks = map[string]time.Time{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		key, val, ok := strings.Cut(sc.Text(), " ")
		ns, err := strconv.ParseInt(val, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("audit stages %s: line %d: want \"<stage> <ns>\", got %q", path, n, sc.Text())
		}
		switch key {
		case AuditVerified:
			t.verified = time.Duration(ns)
			continue
		case AuditPeakResident:
			t.peakKiB = ns
			continue
		}
		t.marks[key] = time.Unix(0, ns)
	}
	return nil
}

// auditBreakdown returns the median of each of auditStages over times:
// each mark from the last earlier one the process wrote (the first from
// its start), the exit from the last mark; a stage no process reached is
// left out.
func auditBreakdown(times []auditTimes) []StageTime {
	per := make([][]time.Duration, len(auditStages))
	for _, t := range times {
		prev := t.begin
		for i, s := range auditStages {
			switch {
			case s.mark == AuditVerified:
				if t.verified > 0 {
					per[i] = append(per[i], t.verified)
				}
			case s.mark == "":
				per[i] = append(per[i], t.end.Sub(prev))
			default:
				if at, ok := t.marks[s.mark]; ok {
					per[i] = append(per[i], at.Sub(prev))
					prev = at
				}
			}
		}
	}
	var out []StageTime
	for i, ds := range per {
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		out = append(out, StageTime{Stage: auditStages[i].stage, P50ms: float64(ds[(len(ds)-1)/2].Microseconds()) / 1000, N: len(ds)})
	}
	return out
}

// auditFloor is the least ratio of audit's rate to an ordered read of
// the session's subject: audit reads that subject once and does the rest
// while it streams.
const auditFloor = 0.8

// scaleAudit runs `logbook audit` of the long session cfg.Queries times:
// events per second of timeline printed, end to end, each run broken
// down into its stages (AuditStagesEnv).
func (e *benchEnv) scaleAudit(ctx context.Context) (benchSample, error) {
	s, err := e.scaleLongSession(ctx)
	if err != nil {
		return benchSample{}, err
	}
	file := filepath.Join(e.dir, "audit-stages")
	args := []string{"--data", s.srv.data, "audit", s.long}
	lat := make([]time.Duration, 0, e.cfg.Queries)
	times := make([]auditTimes, 0, e.cfg.Queries)
	start := time.Now()
	for range e.cfg.Queries {
		if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
			return benchSample{}, err
		}
		c := exec.CommandContext(ctx, e.cli.Exe, args...)
		c.Args[0] = "logbook" // the name a test binary dispatches on
		c.Env = append(os.Environ(), AuditStagesEnv+"="+file)
		// The timeline is counted as it streams, not kept: a buffer of
		// its megabytes, grown from nothing, is the bench's own cost.
		var out itemCounter
		var errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		t := auditTimes{begin: time.Now()}
		if err := c.Run(); err != nil {
			return benchSample{}, fmt.Errorf("logbook %v: %w\n%s", args, err, errb.Bytes())
		}
		t.end = time.Now()
		lat = append(lat, t.end.Sub(t.begin))
		u, ok := usageOf(c.ProcessState)
		if got := out.items + 1; got < e.cfg.ScaleEvents {
			return benchSample{}, fmt.Errorf("logbook %v: printed %d items, want %d", args, got, e.cfg.ScaleEvents)
		}
		if err := readAuditTimes(file, &t); err != nil {
			return benchSample{}, err
		}
		times = append(times, t)
		if ok {
			u.peakKiB = t.peakKiB
			e.auditUse = append(e.auditUse, u)
		}
	}
	if len(e.auditUse) > 0 {
		// One note, over every run of the row so far.
		note := fmt.Sprintf("audit, one session of %s events: each audit process (medians of %d) %s",
			benchThousands(int64(e.cfg.ScaleEvents)), len(e.auditUse), medianUsage(slices.Clone(e.auditUse)))
		if e.auditNote == 0 {
			e.notes = append(e.notes, note)
			e.auditNote = len(e.notes)
		} else {
			e.notes[e.auditNote-1] = note
		}
	}
	return benchSample{ops: e.cfg.ScaleEvents * e.cfg.Queries, elapsed: time.Since(start), lat: lat, stages: auditBreakdown(times)}, nil
}

// itemCounter is an io.Writer that counts the timeline items written to
// it, each but the first begun by "\n#", across writes; it keeps
// nothing else.
type itemCounter struct {
	items   int
	newline bool // the last byte written was '\n'
}

// Write counts the items p begins; it never fails.
func (c *itemCounter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.newline && p[0] == '#' {
		c.items++
	}
	c.items += bytes.Count(p, []byte("\n#"))
	c.newline = p[len(p)-1] == '\n'
	return len(p), nil
}

// auditUsage is what one audit process used: its CPU time and page
// faults as its parent's wait reported them (the child's rusage), its
// peak resident set as it said it (AuditPeakResident).
type auditUsage struct {
	cpu     time.Duration // user and system time
	minflt  int64         // minor page faults: pages first touched
	peakKiB int64         // peak resident set, KiB; 0: not said
}

// usageOf returns the usage ps reports, its peakKiB unset; false where
// the system reports none (not a syscall.Rusage).
func usageOf(ps *os.ProcessState) (auditUsage, bool) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return auditUsage{}, false
	}
	return auditUsage{cpu: ps.UserTime() + ps.SystemTime(), minflt: ru.Minflt}, true
}

// medianUsage says the median of each of us's measures: CPU time,
// minor page faults and peak resident set (left out when the median
// process did not say it). us must not be empty; it is
// sorted in place, measure by measure.
func medianUsage(us []auditUsage) string {
	mid := (len(us) - 1) / 2
	slices.SortFunc(us, func(a, b auditUsage) int { return cmp.Compare(a.cpu, b.cpu) })
	cpu := us[mid].cpu
	slices.SortFunc(us, func(a, b auditUsage) int { return cmp.Compare(a.minflt, b.minflt) })
	flt := us[mid].minflt
	slices.SortFunc(us, func(a, b auditUsage) int { return cmp.Compare(a.peakKiB, b.peakKiB) })
	rss := us[mid].peakKiB
	out := fmt.Sprintf("took %.1f ms of CPU (user and system), %s minor page faults (pages first touched)",
		float64(cpu.Microseconds())/1000, benchThousands(flt))
	if rss > 0 {
		out += fmt.Sprintf(", peak resident %.1f MiB", float64(rss)/1024)
	}
	return out
}
