package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

func benchCmd(g *globals) *cobra.Command {
	var (
		cfg   benchConfig
		fsync []string
		quick bool
		keep  bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure Logbook on this machine against raw JetStream on the same server",
		Long: `bench runs standard workloads on embedded JetStream servers of its own, in a
fresh directory (a temporary one, or one made inside --data), and prints one
row per workload beside the raw JetStream baseline for the same work,
measured on the same server in the same run, and their ratio:

  append    decisions through the log (validation, encoding, optimistic
            concurrency, Nats-Msg-Id, group commit) by 1, 8 and 64 writers,
            one and ten events per decision, per --fsync mode; baseline: the
            same messages published by the same writers, one plain publish
            or one atomic batch per decision, without those checks; for 64
            writers also atomic batches of 500 from one publisher, the
            server's durable ceiling
  read      projection catch-up into Pebble on disk, replay into memory
            (a plain fold, and Pebble in memory) and into Pebble on disk, of
            a log of --events session events; baseline: an ordered consumer
            reading the same messages without decoding them
  import    import claude of synthetic transcripts into a running serve;
            baseline: the same messages published the same way
  hook      hook claude, this binary started once per payload, against a
            running serve (fsync always); baseline: logbook version
  scale     queries of a generated history answered by a running serve,
            this binary started once per query and timed to its exit:
            sessions (all, --limit 100, --phase working with 10 working) at
            each --scale-sessions size, session show and audit of one
            session of --scale-events events; baselines: logbook version,
            and for audit an ordered consumer reading the session's subject

ratio = Logbook's rate ÷ the baseline's rate; 1.00 means as fast as raw
JetStream. Absolute numbers move between runs on a shared machine; the
ratios are steadier. Where Logbook holds itself to a floor for a ratio,
the FLOOR column says whether this run meets it; for the scale rows it
holds the sessions p50 at 10,000 sessions to 300 ms, its growth between
sizes to at most the growth of the rows printed, and the --limit and
--phase p50s to 1.5 times (+5 ms) those at the first size.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.natsURL != "" {
				return errors.New("bench runs embedded servers of its own; --nats-url does not apply")
			}
			for _, o := range cfg.only {
				if !slices.Contains([]string{"append", "read", "import", "hook", "command", "scale"}, o) {
					return fmt.Errorf("--only %q: no such group (want append, read, import, hook, command or scale)", o)
				}
			}
			cfg = cfg.orDefaults(benchPreset(quick))
			cfg.quick = quick
			for _, f := range fsync {
				switch f {
				case "always":
					cfg.fsync = append(cfg.fsync, natslog.FsyncAlways)
				case "interval":
					cfg.fsync = append(cfg.fsync, natslog.FsyncInterval)
				default:
					return fmt.Errorf("--fsync %q: want always or interval", f)
				}
			}
			return bench(cmd.Context(), g, cfg, keep)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&quick, "quick", false, "smaller workloads: the whole run takes under a minute on 2 cores")
	f.StringSliceVar(&fsync, "fsync", []string{"always", "interval"}, "durability modes of the append rows: always, interval, or both (always,interval)")
	f.StringSliceVar(&cfg.only, "only", nil, "run only these groups: append, read, import, hook, command, scale")
	f.IntVar(&cfg.appends, "appends", 0, "events per append row (default 10000, --quick 2000)")
	f.IntVar(&cfg.events, "events", 0, "events in the log that read rows replay (default 200000, --quick 20000)")
	f.IntVar(&cfg.sessions, "sessions", 0, "transcripts the import row imports (default 20, --quick 10)")
	f.IntVar(&cfg.lines, "lines", 0, "lines per transcript (default 250, --quick 60)")
	f.IntVar(&cfg.hooks, "hooks", 0, "hook payloads the hook row sends (default 200, --quick 30)")
	f.IntSliceVar(&cfg.scaleSessions, "scale-sessions", nil, "history sizes of the scale rows, in sessions, ascending (default 1000,10000,50000, --quick 1000,10000)")
	f.IntVar(&cfg.scaleEvents, "scale-events", 0, "events of the long session of the scale rows (default 100000, --quick 20000)")
	f.IntVar(&cfg.queries, "queries", 0, "runs of each scale row (default 20, --quick 10)")
	f.BoolVar(&keep, "keep", false, "keep the working directory")
	return cmd
}

// benchConfig sizes a run. Zero sizes take the preset's.
type benchConfig struct {
	quick    bool
	fsync    []natslog.Fsync
	only     []string
	appends  int // events per append row
	events   int // events in the read rows' log
	sessions int // transcripts imported
	lines    int // lines per transcript
	hooks    int // hook payloads sent

	scaleSessions []int // history sizes of the scale rows, ascending
	scaleEvents   int   // events of the scale rows' long session
	queries       int   // runs of each scale row
}

// benchPreset returns the sizes of a full run (a few minutes on 2 cores)
// or of a quick one (under a minute).
func benchPreset(quick bool) benchConfig {
	if quick {
		return benchConfig{appends: 2_000, events: 20_000, sessions: 10, lines: 60, hooks: 30,
			scaleSessions: []int{1_000, 10_000}, scaleEvents: 20_000, queries: 10}
	}
	return benchConfig{appends: 10_000, events: 200_000, sessions: 20, lines: 250, hooks: 200,
		scaleSessions: []int{1_000, 10_000, 50_000}, scaleEvents: 100_000, queries: 20}
}

func (c benchConfig) orDefaults(d benchConfig) benchConfig {
	pick := func(v, d int) int {
		if v > 0 {
			return v
		}
		return d
	}
	c.appends = pick(c.appends, d.appends)
	c.events = pick(c.events, d.events)
	c.sessions = pick(c.sessions, d.sessions)
	c.lines = pick(c.lines, d.lines)
	c.hooks = pick(c.hooks, d.hooks)
	c.scaleEvents = pick(c.scaleEvents, d.scaleEvents)
	c.queries = pick(c.queries, d.queries)
	if len(c.scaleSessions) == 0 {
		c.scaleSessions = d.scaleSessions
	}
	return c
}

// wants reports whether group is selected by --only.
func (c benchConfig) wants(group string) bool {
	return len(c.only) == 0 || slices.Contains(c.only, group)
}

// A benchRun does one workload once and says what it measured.
type benchRun func(ctx context.Context) (benchSample, error)

// benchSample is what one run measured.
type benchSample struct {
	ops     int             // operations done: events, lines, hook calls, processes
	elapsed time.Duration   // wall time of the timed part
	lat     []time.Duration // each operation's latency; nil when not timed one by one
}

// benchWorkload is one row of the table: a Logbook run and the raw
// JetStream runs it is compared with.
type benchWorkload struct {
	group     string // what --only selects
	name      string
	unit      string // what one operation is, e.g. "ev"
	logbook   benchRun
	baselines []benchBaseline
	// check, when set, holds Logbook's figures to a floor of their own
	// (a latency, a growth); nil from it: nothing to hold them to.
	check func(benchFigures) *benchCheck
}

// benchCheck is a workload's own floor and whether this run meets it.
type benchCheck struct {
	Text string `json:"text"` // e.g. "p50 ≤300ms"
	OK   bool   `json:"ok"`
}

// benchBaseline is the raw JetStream (or bare process) doing the same work.
type benchBaseline struct {
	name  string
	run   benchRun
	floor float64 // the least ratio Logbook accepts; 0: none
}

// benchReport is the result of a run; its JSON is what --json prints.
type benchReport struct {
	Version string     `json:"version"`
	Go      string     `json:"go"`
	OS      string     `json:"os"`
	CPUs    int        `json:"cpus"`
	Quick   bool       `json:"quick"`
	Dir     string     `json:"dir"`
	Notes   []string   `json:"notes,omitempty"` // about the workloads' data
	Rows    []benchRow `json:"rows"`
}

// benchRow is one workload's result.
type benchRow struct {
	Group     string         `json:"group"`
	Workload  string         `json:"workload"`
	Unit      string         `json:"unit"`
	Logbook   benchFigures   `json:"logbook"`
	Baselines []benchCompare `json:"baselines"`
	Check     *benchCheck    `json:"check,omitempty"`
}

// benchFigures summarizes a sample.
type benchFigures struct {
	Ops     int      `json:"ops"`
	Seconds float64  `json:"seconds"`
	Rate    float64  `json:"rate"`             // ops per second
	P50ms   *float64 `json:"p50_ms,omitempty"` // per-operation latency, when timed
	P99ms   *float64 `json:"p99_ms,omitempty"`
}

// benchCompare is one baseline's figures and the ratio to Logbook's.
type benchCompare struct {
	Name string `json:"name"`
	benchFigures
	Ratio float64 `json:"ratio"`           // Logbook rate ÷ baseline rate
	Floor float64 `json:"floor,omitempty"` // least ratio accepted
	Meets *bool   `json:"meets_floor,omitempty"`
}

func benchFiguresOf(s benchSample) benchFigures {
	f := benchFigures{Ops: s.ops, Seconds: s.elapsed.Seconds()}
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

// bench runs the workloads cfg selects and prints the table (or JSON).
func bench(ctx context.Context, g *globals, cfg benchConfig, keep bool) error {
	dir, err := benchDir(g.data)
	if err != nil {
		return err
	}
	env := newBenchEnv(dir, cfg)
	defer func() {
		env.close()
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	rep := benchReport{
		Version: version, Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		CPUs: runtime.NumCPU(), Quick: cfg.quick, Dir: dir,
	}
	var ws []benchWorkload
	for _, w := range env.workloads() {
		if cfg.wants(w.group) {
			ws = append(ws, w)
		}
	}
	prog := benchProgress{w: g.stderr, on: benchIsTerminal(g.stderr)}
	env.note = prog.note
	for i, w := range ws {
		step := fmt.Sprintf("[%d/%d] %s", i+1, len(ws), w.name)
		prog.note(step + ": logbook")
		s, err := w.logbook(ctx)
		if err != nil {
			return fmt.Errorf("bench %s: %w", w.name, err)
		}
		row := benchRow{Group: w.group, Workload: w.name, Unit: w.unit, Logbook: benchFiguresOf(s)}
		if w.check != nil {
			row.Check = w.check(row.Logbook)
		}
		for _, b := range w.baselines {
			prog.note(step + ": " + b.name)
			bs, err := b.run(ctx)
			if err != nil {
				return fmt.Errorf("bench %s: baseline %s: %w", w.name, b.name, err)
			}
			c := benchCompare{Name: b.name, benchFigures: benchFiguresOf(bs), Floor: b.floor}
			if c.Rate > 0 {
				c.Ratio = row.Logbook.Rate / c.Rate
			}
			if b.floor > 0 {
				ok := c.Ratio >= b.floor
				c.Meets = &ok
			}
			row.Baselines = append(row.Baselines, c)
		}
		rep.Rows = append(rep.Rows, row)
	}
	prog.note("")
	rep.Notes = env.notes
	if g.json {
		return writeJSON(g.stdout, rep)
	}
	return rep.writeText(g.stdout, keep)
}

// benchDir makes the run's working directory: a fresh temporary one, or
// a fresh one inside parent when --data names it (so the run measures the
// disk that holds it). It never works in an existing data dir.
func benchDir(parent string) (string, error) {
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

// writeText prints the report as a table: one line per baseline, the
// Logbook figures on the first line of each workload.
func (r benchReport) writeText(w io.Writer, kept bool) error {
	where := "removed after the run"
	if kept {
		where = "kept"
	}
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	fmt.Fprintf(w, "logbook bench (%s run): %s, %s, %d CPUs; working dir %s (%s)\n", mode, r.Version, r.OS, r.CPUs, r.Dir, where)
	fmt.Fprintln(w, "ratio = Logbook rate ÷ baseline rate, both on the same server in this run; P50/P99: Logbook's latency per operation")
	for _, n := range r.Notes {
		fmt.Fprintln(w, n)
	}
	fmt.Fprintln(w)
	t := [][]string{{"WORKLOAD", "LOGBOOK", "P50", "P99", "BASELINE", "RAW", "RATIO", "FLOOR"}}
	for _, row := range r.Rows {
		for i, b := range row.Baselines {
			cells := []string{"", "", "", "", b.Name, benchRate(b.Rate, row.Unit), fmt.Sprintf("%.2f", b.Ratio), ""}
			if i == 0 {
				cells[0], cells[1] = row.Workload, benchRate(row.Logbook.Rate, row.Unit)
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
	return benchTable(w, t, "lrrrlrrl")
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

// benchProgress shows what runs, on one rewritten line, when its writer
// is a terminal; otherwise it says nothing.
type benchProgress struct {
	w  io.Writer
	on bool
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
