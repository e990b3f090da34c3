// Package bench holds the workloads of `logbook bench`: standard runs of the
// log, replay, import, hook, command and query paths, each beside the raw
// JetStream (or bare process) baseline for the same work on the same
// server in the same run, and the report that compares them. It also
// makes the synthetic transcripts and histories the command's tests use.
// cmd/logbook wires it to the command line through CLI.
package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Config sizes a run. Zero sizes take the preset's (OrDefaults).
type Config struct {
	Quick    bool            // the quick preset's sizes; the report says so
	Fsync    []natslog.Fsync // durability modes of the append rows
	Only     []string        // groups to run (Groups); none: all but cluster
	Cluster  bool            // also the cluster group
	Appends  int             // events per append row
	Events   int             // events in the read rows' log
	Sessions int             // transcripts imported
	Lines    int             // lines per transcript
	// SmallFiles is how many transcripts of SmallFileLines lines the
	// import row of many small files imports.
	SmallFiles int
	Hooks      int // hook payloads sent, and processes of the other process rows

	ScaleSessions []int // history sizes of the scale rows, ascending
	ScaleEvents   int   // events of the scale rows' long session
	Queries       int   // runs of each scale row
}

// Groups are the names Config.Only selects rows by, in the table's order.
// The cluster group runs only when asked for (Config.Cluster, or Only).
// "audit" is a narrower name: the audit row of the scale group alone
// (scale runs it too).
var Groups = []string{"append", "read", "import", "hook", "command", "signing", "scale", "audit", "cluster"}

// Preset returns the sizes of a full run (a few minutes on 2 cores)
// or of a quick one (under a minute). A quick run still sends 100 hooks:
// the p99 of fewer is their slowest, one stall away from a missed floor.
func Preset(quick bool) Config {
	if quick {
		return Config{Appends: 2_000, Events: 20_000, Sessions: 10, Lines: 60, SmallFiles: 200, Hooks: 100,
			ScaleSessions: []int{1_000, 10_000}, ScaleEvents: 20_000, Queries: 10}
	}
	return Config{Appends: 10_000, Events: 200_000, Sessions: 20, Lines: 250, SmallFiles: 555, Hooks: 200,
		ScaleSessions: []int{1_000, 10_000, 50_000}, ScaleEvents: 100_000, Queries: 20}
}

// OrDefaults returns c with each zero size taken from d.
func (c Config) OrDefaults(d Config) Config {
	pick := func(v, d int) int {
		if v > 0 {
			return v
		}
		return d
	}
	c.Appends = pick(c.Appends, d.Appends)
	c.Events = pick(c.Events, d.Events)
	c.Sessions = pick(c.Sessions, d.Sessions)
	c.Lines = pick(c.Lines, d.Lines)
	c.SmallFiles = pick(c.SmallFiles, d.SmallFiles)
	c.Hooks = pick(c.Hooks, d.Hooks)
	c.ScaleEvents = pick(c.ScaleEvents, d.ScaleEvents)
	c.Queries = pick(c.Queries, d.Queries)
	if len(c.ScaleSessions) == 0 {
		c.ScaleSessions = d.ScaleSessions
	}
	return c
}

// wants reports whether group is selected by --only.
func (c Config) wants(group string) bool {
	if group == "cluster" && c.Cluster {
		return true
	}
	return len(c.Only) == 0 && group != "cluster" || slices.Contains(c.Only, group)
}

// wantsRow reports whether w is selected by --only: by its group, or
// by its own name (benchWorkload.row).
func (c Config) wantsRow(w benchWorkload) bool {
	return c.wants(w.group) || w.row != "" && slices.Contains(c.Only, w.row)
}

// A benchRun does one workload once and says what it measured.
type benchRun func(ctx context.Context) (benchSample, error)

// benchSample is what one run measured.
type benchSample struct {
	ops     int             // operations done: events, lines, hook calls, processes
	elapsed time.Duration   // wall time of the timed part
	lat     []time.Duration // each operation's latency; nil when not timed one by one
	stages  []StageTime     // where an operation's time went; nil when not broken down
}

// benchWorkload is one row of the table: a Logbook run and the raw
// JetStream runs it is compared with.
type benchWorkload struct {
	group string // what --only selects
	// row, when set, is a name --only selects this row by alone, beside
	// its group (a Groups name no other row's group is).
	row       string
	name      string
	unit      string // what one operation is, e.g. "ev"
	logbook   benchRun
	baselines []benchBaseline
	// check, when set, holds Logbook's figures to a floor of their own
	// (a latency, a growth); nil from it: nothing to hold them to.
	check func(Figures) *Check
	// checkBase, when set, holds Logbook's figures to a floor set by
	// its first baseline's, measured in the same run (a boundary's own
	// start); its Check replaces check's.
	checkBase func(logbook, base Figures) *Check
	// runs, when above 1, is how often the Logbook run and its baselines
	// run, in turn (Logbook, baselines, then baselines, Logbook, …), so
	// that a burst of load on a shared machine does not fall on one side
	// only; the row shows the median sample by rate of each, and the
	// median of the runs' ratios (benchPairedRatio).
	runs int
	// vs, when set, holds Logbook's samples to a floor against the
	// first baseline's, run by run (a latency difference, say); it
	// gives the row's Check in check's place.
	vs func(logbook, baseline []benchSample) *Check
}

// Check is a workload's own floor and whether this run meets it.
type Check struct {
	Text string `json:"text"` // e.g. "p50 ≤300ms"
	OK   bool   `json:"ok"`
}

// benchBaseline is the raw JetStream (or bare process) doing the same work.
type benchBaseline struct {
	name  string
	run   benchRun
	floor float64 // the least ratio Logbook accepts; 0: none
}

// Report is the result of a run; its JSON is what --json prints.
type Report struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	CPUs    int    `json:"cpus"`
	Quick   bool   `json:"quick"`
	Dir     string `json:"dir"`
	// PageTouchNs is what this machine charged, at the start of the
	// run, for the first touch of a page of memory (pageTouchCost), in
	// nanoseconds; 0 when it could not be measured.
	PageTouchNs int64    `json:"page_touch_ns"`
	Notes       []string `json:"notes,omitempty"` // about the workloads' data
	Rows        []Row    `json:"rows"`
}

// Row is one workload's result.
type Row struct {
	Group     string    `json:"group"`
	Workload  string    `json:"workload"`
	Unit      string    `json:"unit"`
	Logbook   Figures   `json:"logbook"`
	Baselines []Compare `json:"baselines"`
	Check     *Check    `json:"check,omitempty"`
	// Stages breaks Logbook's operation down, stage by stage, in the
	// run the row shows; none when the workload is not broken down.
	Stages []StageTime `json:"stages,omitempty"`
}

// Figures summarizes a sample.
type Figures struct {
	Ops     int      `json:"ops"`
	Seconds float64  `json:"seconds"`
	Rate    float64  `json:"rate"`             // ops per second
	P50ms   *float64 `json:"p50_ms,omitempty"` // per-operation latency, when timed
	P99ms   *float64 `json:"p99_ms,omitempty"`
}

// Compare is one baseline's figures and the ratio to Logbook's.
type Compare struct {
	Name string `json:"name"`
	Figures
	// Ratio is Logbook's rate ÷ the baseline's; for a row run several
	// times, the median of each run's ratio (benchPairedRatio).
	Ratio float64 `json:"ratio"`
	Floor float64 `json:"floor,omitempty"` // least ratio accepted
	Meets *bool   `json:"meets_floor,omitempty"`
}

func benchFiguresOf(s benchSample) Figures {
	f := Figures{Ops: s.ops, Seconds: s.elapsed.Seconds()}
	if s.elapsed > 0 {
		f.Rate = float64(s.ops) / s.elapsed.Seconds()
	}
	if len(s.lat) > 0 {
		lat := slices.Clone(s.lat)
		slices.Sort(lat)
		p := func(q float64) *float64 {
			i := int(math.Ceil(q*float64(len(lat)))) - 1
			ms := float64(lat[max(i, 0)].Microseconds()) / 1000
			return &ms
		}
		f.P50ms, f.P99ms = p(0.50), p(0.99)
	}
	return f
}

// benchPairedRatio returns the median of the ratios of Logbook's rate to
// the baseline's in each run (the lower middle one of an even number),
// 0 if a run has no rate. Each pair ran back to back, so a drift of the
// machine's speed over the row (load from elsewhere, a server warming
// up) cancels out of each ratio; the ratio of the two median rates,
// taken from different runs, keeps it. With one run it is that run's
// ratio.
func benchPairedRatio(ls, bs []benchSample) float64 {
	rate := func(s benchSample) float64 {
		if s.elapsed <= 0 {
			return 0
		}
		return float64(s.ops) / s.elapsed.Seconds()
	}
	var rs []float64
	for i := range min(len(ls), len(bs)) {
		l, b := rate(ls[i]), rate(bs[i])
		if l <= 0 || b <= 0 {
			return 0
		}
		rs = append(rs, l/b)
	}
	if len(rs) == 0 {
		return 0
	}
	slices.Sort(rs)
	return rs[(len(rs)-1)/2]
}

// benchMedian returns the sample of median rate among ss (the lower
// middle one of an even number).
func benchMedian(ss []benchSample) benchSample {
	rate := func(s benchSample) float64 {
		if s.elapsed <= 0 {
			return 0
		}
		return float64(s.ops) / s.elapsed.Seconds()
	}
	ss = slices.Clone(ss)
	slices.SortStableFunc(ss, func(a, b benchSample) int { return cmp.Compare(rate(a), rate(b)) })
	return ss[(len(ss)-1)/2]
}

// CLI is what the workloads need of the logbook command line they
// measure; cmd/logbook fills it in.
type CLI struct {
	// Run runs one logbook command line in this process, as main does.
	Run func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
	// Dial connects to the server running on data dir data as other
	// commands connect, once its API answers; an error while it does not.
	Dial func(ctx context.Context, data string) (*nats.Conn, error)
	// Checkpoint returns the last log sequence the projection of the
	// server on nc holds.
	Checkpoint func(ctx context.Context, nc *nats.Conn) (uint64, error)
	// SpoolDir returns the hook spool's directory in data dir data.
	SpoolDir func(data string) string
	// Exe is the logbook binary the process rows start, as `logbook`
	// (argv[0], the name a test binary dispatches on).
	Exe string
	// HookExe is the logbook-hook binary, started as `logbook-hook`;
	// "" leaves its rows out.
	HookExe string
	// ExecExe is the logbook-exec binary, started as `logbook-exec`: the
	// command rows run it ("" runs `logbook exec`).
	ExecExe string
	// RunUnsigned is Run, except that a serve it runs signs nothing: it
	// registers no key and appends no signing.began, so its log is
	// what a log was before signing (every event "before signing"),
	// and neither its projector nor its checkpoints' judgment verify a
	// signature. Only this process can ask for it: it is the signing
	// group's unsigned twin of serve. Nil leaves the hook row of the
	// signing group out.
	RunUnsigned func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
	// Version is what the report names the build by.
	Version string
}

// Run runs the workloads cfg selects in dir (which it leaves in place)
// and returns the report. Progress goes to progress (nil: nowhere): on
// one rewritten line when it is a terminal, else a line as each row
// starts.
func Run(ctx context.Context, cli CLI, cfg Config, dir string, progress io.Writer) (Report, error) {
	env := newBenchEnv(dir, cfg, cli)
	defer env.close()
	rep := Report{
		Version: BuildVersion(cli.Version), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		CPUs: runtime.NumCPU(), Quick: cfg.Quick, Dir: dir,
		PageTouchNs: int64(pageTouchCost(5)),
	}
	var ws []benchWorkload
	for _, w := range env.workloads() {
		if cfg.wantsRow(w) {
			ws = append(ws, w)
		}
	}
	prog := benchProgress{w: progress, on: benchIsTerminal(progress)}
	env.note = prog.note
	for i, w := range ws {
		step := fmt.Sprintf("[%d/%d] %s", i+1, len(ws), w.name)
		prog.row(step)
		if w.group == "command" && i > 0 && ws[i-1].group != "command" {
			// The command rows time a command on a serve at rest. The
			// rows before them leave the serve they share catching up
			// (an import's events judged and checkpointed), work that
			// would be charged to the commands.
			prog.note(step + ": waiting for serve to settle")
			waited, settled := settle(ctx, settleMax)
			if !settled {
				env.notes = append(env.notes, fmt.Sprintf("command rows: serve still busy after %s (more than %.0f%% of a CPU); timed as it was", waited.Round(time.Millisecond), settleBusy*100))
			} else {
				env.notes = append(env.notes, fmt.Sprintf("command rows: began once serve had settled, %s after the rows before them", waited.Round(time.Millisecond)))
			}
		}
		var (
			ls []benchSample
			bs = make([][]benchSample, len(w.baselines))
		)
		logbook := func() error {
			prog.note(step + ": logbook")
			// Each sample starts with the garbage of the one before it
			// collected, as testing.B does before a benchmark: else a
			// sample pays for its predecessor's heap.
			runtime.GC()
			s, err := w.logbook(ctx)
			if err != nil {
				return fmt.Errorf("bench %s: %w", w.name, err)
			}
			ls = append(ls, s)
			return nil
		}
		baselines := func() error {
			for i, b := range w.baselines {
				prog.note(step + ": " + b.name)
				runtime.GC()
				s, err := b.run(ctx)
				if err != nil {
					return fmt.Errorf("bench %s: baseline %s: %w", w.name, b.name, err)
				}
				bs[i] = append(bs[i], s)
			}
			return nil
		}
		for r := range max(w.runs, 1) {
			// Runs alternate which side goes first, so that what the
			// first pays (a cold cache, a warming server) falls on both.
			first, second := logbook, baselines
			if r%2 == 1 {
				first, second = baselines, logbook
			}
			if err := first(); err != nil {
				return rep, err
			}
			if err := second(); err != nil {
				return rep, err
			}
		}
		med := benchMedian(ls)
		row := Row{Group: w.group, Workload: w.name, Unit: w.unit, Logbook: benchFiguresOf(med), Stages: med.stages}
		if w.check != nil {
			row.Check = w.check(row.Logbook)
		}
		for i, b := range w.baselines {
			c := Compare{Name: b.name, Figures: benchFiguresOf(benchMedian(bs[i])), Floor: b.floor}
			c.Ratio = benchPairedRatio(ls, bs[i])
			if b.floor > 0 {
				ok := c.Ratio >= b.floor
				c.Meets = &ok
			}
			row.Baselines = append(row.Baselines, c)
		}
		if w.vs != nil && len(w.baselines) > 0 {
			row.Check = w.vs(ls, bs[0])
		}
		if w.checkBase != nil && len(row.Baselines) > 0 {
			row.Check = w.checkBase(row.Logbook, row.Baselines[0].Figures)
		}
		rep.Rows = append(rep.Rows, row)
	}
	prog.note("")
	rep.Notes = env.notes
	return rep, nil
}

// MakeDir makes a run's working directory: a fresh temporary one, or a
// fresh one inside parent when parent is not "" (so the run measures the
// disk that holds it). It never works in an existing data dir.
func MakeDir(parent string) (string, error) {
	if parent != "" {
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return "", fmt.Errorf("bench: %w", err)
		}
	}
	dir, err := os.MkdirTemp(parent, "logbook-bench-")
	if err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	return dir, nil
}

// WriteText prints the report as a table: one line per baseline, the
// Logbook figures on the first line of each workload; kept says whether
// the working directory stays.
func (r Report) WriteText(w io.Writer, kept bool) error {
	where := "removed after the run"
	if kept {
		where = "kept"
	}
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	fmt.Fprintf(w, "logbook bench (%s run): %s, %s, %d CPUs; working dir %s (%s)\n", mode, r.Version, r.OS, r.CPUs, r.Dir, where)
	if r.PageTouchNs > 0 {
		fmt.Fprintf(w, "machine: a page of memory first touched costs %.2f µs (page fault; median of 5 maps of 16 MiB): process starts and growing heaps pay it per page, so the rows that start processes move with it between machines\n", float64(r.PageTouchNs)/1e3)
	}
	fmt.Fprintln(w, "RATIO = Logbook's rate ÷ the baseline's rate, both measured on the same server in this run (1.00: as fast as raw); P50/P99: Logbook's latency per operation")
	fmt.Fprintln(w, "FLOOR = the least ratio (≥) or the most latency (≤) Logbook holds itself to: ok met, LOW or MISSED not met (--check exits 1)")
	for _, n := range r.Notes {
		fmt.Fprintln(w, n)
	}
	fmt.Fprintln(w)
	t := [][]string{{"WORKLOAD", "LOGBOOK", "P50", "P99", "BASELINE", "RAW", "RATIO", "FLOOR"}}
	for _, row := range r.Rows {
		for i, b := range row.Baselines {
			// Every line names its workload and its baseline, so a line
			// read alone (grep) says what it compares.
			cells := []string{row.Workload, "〃", "", "", b.Name, benchRate(b.Rate, row.Unit), fmt.Sprintf("%.2f", b.Ratio), ""}
			if i == 0 {
				cells[1] = benchRate(row.Logbook.Rate, row.Unit)
				cells[2], cells[3] = benchMs(row.Logbook.P50ms), benchMs(row.Logbook.P99ms)
			}
			if b.Meets != nil {
				cells[7] = fmt.Sprintf("≥%.2f ok", b.Floor)
				if !*b.Meets {
					cells[7] = fmt.Sprintf("≥%.2f LOW", b.Floor)
				}
			}
			if i == 0 && row.Check != nil {
				cells[7] = strings.TrimSpace(cells[7] + " " + row.Check.Text + " ok")
				if !row.Check.OK {
					cells[7] = strings.TrimSuffix(cells[7], " ok") + " MISSED"
				}
			}
			t = append(t, cells)
		}
	}
	if err := benchTable(w, t, "lrrrlrrl"); err != nil {
		return err
	}
	for _, row := range r.Rows {
		if len(row.Stages) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: where the time goes, stage by stage (median of the operations that reached each stage, from the end of the one before)\n", row.Workload)
		st := [][]string{{"STAGE", "P50", "N"}}
		for _, s := range row.Stages {
			st = append(st, []string{s.Stage, benchMs(&s.P50ms), fmt.Sprint(s.N)})
		}
		if err := benchTable(w, st, "lrr"); err != nil {
			return err
		}
	}
	return nil
}

// Missed lists the floors this run did not meet, one line each
// ("workload: baseline ratio 0.31 < 0.40"); none: every floor met.
func (r Report) Missed() []string {
	var out []string
	for _, row := range r.Rows {
		for _, b := range row.Baselines {
			if b.Meets != nil && !*b.Meets {
				out = append(out, fmt.Sprintf("%s: ratio %.2f to %s, floor %.2f", row.Workload, b.Ratio, b.Name, b.Floor))
			}
		}
		if row.Check != nil && !row.Check.OK {
			out = append(out, fmt.Sprintf("%s: %s (p50 %s, p99 %s)", row.Workload, row.Check.Text, benchMs(row.Logbook.P50ms), benchMs(row.Logbook.P99ms)))
		}
	}
	return out
}

// BuildVersion names the build from its VCS information, as the go
// command stamps it: "<module version> <revision, 12 digits>[+dirty]
// <commit time>", e.g. "(devel) 1a2b3c4d5e6f 2026-11-30T16:00:00Z"; fallback
// when the binary carries none (go run, tests).
func BuildVersion(fallback string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fallback
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return fallback
	}
	v := bi.Main.Version
	if fallback != "" && fallback != "dev" {
		v = fallback
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s%s %s", v, rev[:min(12, len(rev))], dirty, at))
}

// benchTable writes rows as columns two spaces apart, each aligned left
// ('l') or right ('r') as align says.
func benchTable(w io.Writer, rows [][]string, align string) error {
	width := make([]int, len(align))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		line := ""
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if align[i] == 'r' {
				c = pad + c
			} else {
				c += pad
			}
			if i > 0 {
				line += "  "
			}
			line += c
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// benchRate formats ops per second with thousands separators, e.g. "12,345 ev/s".
func benchRate(r float64, unit string) string {
	if r >= 100 {
		return benchThousands(int64(math.Round(r))) + " " + unit + "/s"
	}
	return fmt.Sprintf("%.1f %s/s", r, unit)
}

func benchThousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func benchMs(v *float64) string {
	if v == nil {
		return "-"
	}
	if *v < 10 {
		return fmt.Sprintf("%.2fms", *v)
	}
	return fmt.Sprintf("%.1fms", *v)
}

// benchProgress shows what runs: on one rewritten line when its writer
// is a terminal, else one line per row as it starts (a log, a pipe).
type benchProgress struct {
	w  io.Writer
	on bool
}

// row says that row step ("[i/n] workload") starts: a line of its own
// when the writer is no terminal (the rewritten line says it else).
func (p benchProgress) row(step string) {
	if !p.on && p.w != nil {
		fmt.Fprintf(p.w, "logbook bench: %s\n", step)
	}
}

// note replaces the progress line with s ("" clears it).
func (p benchProgress) note(s string) {
	if p.on {
		fmt.Fprintf(p.w, "\r\033[K%s", s)
	}
}

// benchIsTerminal reports whether w is a terminal.
func benchIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
