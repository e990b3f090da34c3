package term

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
)

// columnStarts returns the terminal columns at which the header's
// columns start: after a run of two or more spaces.
func columnStarts(header string) []int {
	r := []rune(header)
	var starts []int
	for i := 2; i < len(r); i++ {
		if r[i] != ' ' && r[i-1] == ' ' && r[i-2] == ' ' {
			starts = append(starts, i)
		}
	}
	return starts
}

// atColumns returns the runes of line by the terminal column each starts
// at (RuneWidth; a rune of width 0 shares its column with the one before).
func atColumns(line string) map[int]rune {
	at := map[int]rune{}
	col := 0
	for _, r := range line {
		w := RuneWidth(r)
		if w > 0 {
			at[col] = r
		}
		col += w
	}
	return at
}

// checkAligned fails t unless every row of table out has a cell
// starting at each terminal column the header's columns start at, and no
// raw escape or control but newline reached out.
func checkAligned(t *testing.T, out string) {
	t.Helper()
	if strings.ContainsAny(out, "\x1b\x07\r\t") {
		t.Fatalf("a raw control reached the table:\n%q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	starts := columnStarts(lines[0])
	if len(starts) < 2 {
		t.Fatalf("header %q: too few columns", lines[0])
	}
	for _, line := range lines[1:] {
		at := atColumns(line)
		for _, k := range starts {
			if r, ok := at[k]; !ok || r == ' ' || at[k-1] != ' ' {
				t.Errorf("column %d does not start a cell in\n%s\nheader:\n%s", k, line, lines[0])
				break
			}
		}
	}
	if t.Failed() {
		t.Logf("table:\n%s", out)
	}
}

// hostileSummaries are sessions whose fields hold escape sequences
// (OSC, CSI), controls and non-ASCII text, next to a plain one.
func hostileSummaries(now time.Time) []session.Summary {
	return []session.Summary{
		{ID: "01PLAINPLAINPLAIN000000000", Phase: "ready", Activity: "idle", Cwd: "/src/app", Model: "opus", UpdatedAt: now},
		{ID: "01EVIL\x1b]0;pwned\x07EVIL00000000", Phase: "work\x1b[31mi\x1b[0mng", Activity: "tool:\x1b]0;title\x07Bash\x01\x7f",
			Cwd: "/src/\x1b[2J日本語/😀/x\ty", Model: "m\u202eodel", Parent: "p\x1b]8;;http://x\x1b\\arent", UpdatedAt: now},
		{ID: "01CJK日本語CJK000000000000", Phase: "ready", Activity: "tool:読む", Cwd: "/ホーム/プロジェクト", Model: "ü", UpdatedAt: now},
	}
}

// TestSessionsTableAlignsEscapedFields: the sessions table measures a
// cell by what it prints (escaped text, terminal columns), so fields holding escape
// sequences, controls, CJK and emoji keep every column in line, narrow
// and wide.
func TestSessionsTableAlignsEscapedFields(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ss := hostileSummaries(now)
	rows := make([]api.SessionRow, len(ss))
	for i, s := range ss {
		rows[i] = api.SessionRow{Summary: s}
	}
	for _, wide := range []bool{false, true} {
		var buf bytes.Buffer
		err := Print(&buf, func(w io.Writer) error { return SessionsView{Now: now, Wide: wide}.Sessions(w, rows) })
		if err != nil {
			t.Fatal(err)
		}
		checkAligned(t, buf.String())
		if !strings.Contains(buf.String(), `\x01\x7f`) || wide && !strings.Contains(buf.String(), `\u202e`) {
			t.Errorf("controls not shown escaped:\n%s", buf.String())
		}
	}
}

// TestCommandsTableAlignsEscapedFields: the same for command list.
func TestCommandsTableAlignsEscapedFields(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cs := []command.State{
		{ID: "c1", Session: "s1", Status: "running", Mode: "read-only", RequestedAt: now, Argv: []string{"make", "test"}},
		{ID: "c2\x1b]0;x\x07", Session: "s\x1b[1m2", Status: "running", Mode: "read-only", RequestedAt: now, Argv: []string{"/bin/echo", "\x1b]0;pwned\x07日本語😀", "a\tb\nc"}},
		{ID: "c3", Session: "s3", Status: "running", Mode: "read-only", RequestedAt: now, Argv: []string{"echo", strings.Repeat("語", 70)}},
	}
	for _, withSession := range []bool{false, true} {
		var buf bytes.Buffer
		if err := Print(&buf, func(w io.Writer) error { return Commands(w, cs, withSession) }); err != nil {
			t.Fatal(err)
		}
		checkAligned(t, buf.String())
	}
}

// TestCommandsTableNamesTheProgramWhole: the ARGV column shows the
// program as the command named it, path and all: a /tmp/ws/ls is not the
// system's ls; and a command bubblewrap never ran shows "not run" as its
// code.
func TestCommandsTableNamesTheProgramWhole(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	one := 1
	cs := []command.State{
		{ID: "c1", Session: "s1", Status: command.StatusStarted, Mode: "read_only", RequestedAt: now, Argv: []string{"/tmp/ws/ls", "-la"}},
		{ID: "c2", Session: "s1", Status: command.StatusExited, ExitCode: &one, NotRun: "bubblewrap exited with status 1 before running it", Mode: "read_only", RequestedAt: now, Argv: []string{"./s1.sh"}},
	}
	var buf bytes.Buffer
	if err := Print(&buf, func(w io.Writer) error { return Commands(w, cs, false) }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "/tmp/ws/ls -la") || !strings.Contains(buf.String(), "not run") {
		t.Errorf("commands table:\n%s", buf.String())
	}
}

// TestCommandsTableCutsALongArgv: an argv longer than 60 runes is cut
// to 60, the last "…"; a command that ends in "..." and fits is shown
// whole, no longer like a cut one.
func TestCommandsTableCutsALongArgv(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cs := []command.State{
		{ID: "c1", Session: "s1", Status: command.StatusStarted, Mode: "read_only", RequestedAt: now, Argv: []string{"echo", strings.Repeat("x", 80)}},
		{ID: "c2", Session: "s1", Status: command.StatusStarted, Mode: "read_only", RequestedAt: now, Argv: []string{"echo", "wait..."}},
	}
	var buf bytes.Buffer
	if err := Print(&buf, func(w io.Writer) error { return Commands(w, cs, false) }); err != nil {
		t.Fatal(err)
	}
	want := "echo " + strings.Repeat("x", 54) + "…"
	if got := buf.String(); !strings.Contains(got, want+"\n") || !strings.Contains(got, "echo wait...\n") {
		t.Errorf("commands table:\n%s\nwant the long argv cut to %q (60 runes) and echo wait... whole", got, want)
	}
}

// TestCommandsTableAbandonedOutput: an abandoned command shows the
// output its dead worker stored (the abandonment records it), and no
// duration, which nobody knows; a running one shows neither.
func TestCommandsTableAbandonedOutput(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cs := []command.State{
		{ID: "c1", Session: "s1", Status: command.StatusAbandoned, OutputBytes: 4321, Mode: "read_only", RequestedAt: now, Argv: []string{"make"}},
		{ID: "c2", Session: "s1", Status: command.StatusStarted, Mode: "read_only", RequestedAt: now, Argv: []string{"make"}},
	}
	var buf bytes.Buffer
	if err := Print(&buf, func(w io.Writer) error { return Commands(w, cs, false) }); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if len(lines) < 3 {
		t.Fatalf("commands table:\n%s", buf.String())
	}
	if f := strings.Fields(lines[1]); !slices.Contains(f, "4321") || !slices.Contains(f, "-") {
		t.Errorf("abandoned row %q, want output 4321 and duration -", lines[1])
	}
	if f := strings.Fields(lines[2]); slices.Contains(f, "0") {
		t.Errorf("running row %q shows a size", lines[2])
	}
}

// TestUsageTableAlignsEscapedFields: the usage tables, by session, model
// and project, measure a cell as sessions does (escaped, in terminal
// columns), so a model or cwd holding escape sequences and controls keeps
// every column in line.
func TestUsageTableAlignsEscapedFields(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	h := now.Add(-time.Hour).Truncate(time.Hour)
	ss := []session.State{
		{ID: "01PLAINPLAINPLAIN000000000", Cwd: "/src/app", Usage: []session.UsageBucket{{Model: "opus", Minute: h, Input: 10, Output: 20, Calls: 1}}},
		{ID: "01EVILEVILEVIL000000000000", Cwd: "/src/\x1b[2Jevil\x07x", Usage: []session.UsageBucket{{Model: "\x1b[31mx\x07y", Minute: h, Input: 1000, Output: 2, Calls: 1}}},
		{ID: "01CJK日本語CJK000000000000", Cwd: "/ホーム/プロジェクト", Usage: []session.UsageBucket{{Model: "m\u202eodel\tz", Minute: h, Input: 5, Calls: 1}}},
	}
	for _, by := range []string{usage.BySession, usage.ByModel, usage.ByProject} {
		rep, err := usage.NewReport(ss, usage.Query{By: by, Loc: time.UTC}, usage.Shipped(), now)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Print(&buf, func(w io.Writer) error { return Usage(w, rep, now) }); err != nil {
			t.Fatal(err)
		}
		table, _, _ := strings.Cut(buf.String(), "\n\n")
		checkAligned(t, table+"\n")
		if by == usage.ByModel && !strings.Contains(table, `x\x07y`) {
			t.Errorf("by %s: controls not shown escaped:\n%s", by, buf.String())
		}
	}
}
