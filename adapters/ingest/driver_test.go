package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/events"
)

// testFormat takes files as named; a file is one of its own when its
// first byte is '{'.
func testFormat() Format[string] {
	return Format[string]{
		Noun: "log", What: "a test log", Ext: ".jsonl", Hint: " (a .jsonl file)", NotOne: "not a test log: ",
		Looks: func(path string) (bool, string) {
			b, _ := os.ReadFile(path)
			if len(b) > 0 && b[0] == '{' {
				return true, ""
			}
			return false, "no object"
		},
		Discover: func(paths []string) ([]string, error) {
			var out []string
			for _, p := range paths {
				if st, err := os.Stat(p); err == nil && st.IsDir() {
					es, _ := os.ReadDir(p)
					for _, e := range es {
						out = append(out, filepath.Join(p, e.Name()))
					}
					continue
				}
				out = append(out, p)
			}
			return out, nil
		},
		File:      func(p string) (string, bool) { return p, true },
		EmptyDirs: "test logs",
	}
}

func TestPlanImport_NamedPaths(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(txt, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := PlanImport(testFormat(), []string{filepath.Join(dir, "none.jsonl"), txt}, nil)
	ne, ok := errors.AsType[*NamedError](err)
	if !ok {
		t.Fatalf("PlanImport = %v; want a *NamedError", err)
	}
	want := []string{filepath.Join(dir, "none.jsonl") + ": no such file or directory", txt + ": not a .jsonl file; want a test log (a .jsonl file)"}
	if !slices.Equal(ne.Paths, want) {
		t.Errorf("refused %q, want %q", ne.Paths, want)
	}
	if got := ne.Error(); got != "2 named paths cannot be imported (above); nothing was imported" {
		t.Errorf("Error() = %q", got)
	}
}

// TestPlanImport_ControlCharactersQuoted: a path holding a control
// character (an escape sequence, a line break) is named quoted, as one
// name that reads as no other, in refusals and in notes alike.
func TestPlanImport_ControlCharactersQuoted(t *testing.T) {
	dir := t.TempDir()
	odd := filepath.Join(dir, "x\x1b[2J\ny.jsonl")
	_, err := PlanImport(testFormat(), []string{odd}, nil)
	ne, ok := errors.AsType[*NamedError](err)
	if !ok || len(ne.Paths) != 1 {
		t.Fatalf("PlanImport = %v; want a *NamedError", err)
	}
	want := `"` + dir + `/x\x1b[2J\ny.jsonl": no such file or directory`
	if ne.Paths[0] != want {
		t.Errorf("refused %q, want %q", ne.Paths[0], want)
	}
	notOne := filepath.Join(dir, "b\x1b[31m.jsonl")
	if err := os.WriteFile(notOne, []byte("text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := PlanImport(testFormat(), []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"` + dir + `/b\x1b[31m.jsonl": not a test log: no object`; len(p.skipped) == 0 || p.skipped[0] != want {
		t.Errorf("skipped %q, want %q", p.skipped, want)
	}
}

func TestPlan_Run(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"a.jsonl": "{}\n", "b.jsonl": "text\n", "c.jsonl": "", "d.jsonl": "{\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := PlanImport(testFormat(), []string{dir, empty}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Units() != 3 { // a, c (nothing yet) and d; b is not one
		t.Fatalf("Units = %d, want 3", p.Units())
	}
	stop := errors.New("line 1: stop")
	sum := p.Run(t.Context(), Runner[string]{Workers: 2, Import: func(_ context.Context, path string, line func()) ([]FileResult, error) {
		switch filepath.Base(path) {
		case "a.jsonl":
			line()
			return []FileResult{{Path: path, Appended: 1, Lines: 1}}, nil
		case "c.jsonl":
			return []FileResult{{Path: path}}, nil
		}
		return nil, stop
	}, Lost: func(err error) bool { return errors.Is(err, stop) }}, io.Discard)
	if sum.Appended != 1 || len(sum.Files) != 1 || len(sum.Errors) != 1 || sum.Lost != 1 {
		t.Errorf("summary %+v; want one file, one line appended, one error lost", sum)
	}
	notes := strings.Join(sum.NotTranscripts, "\n")
	for _, want := range []string{"c.jsonl: empty file, nothing to import yet", "b.jsonl: not a test log: no object", empty + ": no test logs under it"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	if got := sum.Line("log file"); got != "imported 1 log file: 1 line appended (perhaps more: the answers to appends under way were lost with the server), 0 already in the log; 1 stopped at an error" {
		t.Errorf("Line = %q", got)
	}
	if err := sum.Err("log", ""); err == nil || !strings.Contains(err.Error(), "1 log stopped early: the server went away") || !strings.Contains(err.Error(), "so may be the ones whose append was under way") {
		t.Errorf("Err = %v", err)
	}

	// A file that stops at an error after some lines is not counted as
	// imported, though its lines before the error are.
	sum = p.Run(t.Context(), Runner[string]{Workers: 1, Import: func(_ context.Context, path string, line func()) ([]FileResult, error) {
		switch filepath.Base(path) {
		case "a.jsonl":
			return []FileResult{{Path: path, Appended: 1, Lines: 1}}, nil
		case "d.jsonl":
			return []FileResult{{Path: path, Appended: 2, Lines: 2}}, stop
		}
		return []FileResult{{Path: path}}, nil
	}}, io.Discard)
	if got := sum.Line("log file"); got != "imported 1 log file and 1 in part: 3 lines appended, 0 already in the log; 1 stopped at an error" {
		t.Errorf("Line with a file stopped part way = %q", got)
	}
	// One that stops at its first line is not imported in part.
	sum = p.Run(t.Context(), Runner[string]{Workers: 1, Import: func(_ context.Context, path string, line func()) ([]FileResult, error) {
		switch filepath.Base(path) {
		case "a.jsonl":
			return []FileResult{{Path: path, Appended: 1, Lines: 1}}, nil
		case "d.jsonl":
			return []FileResult{{Path: path}}, stop
		}
		return []FileResult{{Path: path}}, nil
	}}, io.Discard)
	if got := sum.Line("log file"); got != "imported 1 log file: 1 line appended, 0 already in the log; 1 stopped at an error" {
		t.Errorf("Line with a file stopped at its first line = %q", got)
	}
	// Interrupted during the first file (one worker): the files never
	// started are counted and said, so that every file of the plan is
	// accounted for.
	ctx, cancel := context.WithCancel(t.Context())
	sum = p.Run(ctx, Runner[string]{Workers: 1, Import: func(_ context.Context, path string, line func()) ([]FileResult, error) {
		cancel()
		return []FileResult{{Path: path, Appended: 1, Lines: 1}}, nil
	}}, io.Discard)
	if started := len(sum.Files) + len(sum.NotTranscripts) - 2; started+sum.NotStarted != p.Units() || sum.NotStarted == 0 {
		t.Errorf("interrupted: %d files, %d notes, %d not started; want the plan's %d units accounted for", len(sum.Files), len(sum.NotTranscripts), sum.NotStarted, p.Units())
	}
	if got := sum.Line("log file"); !strings.HasSuffix(got, fmt.Sprintf("; %d log files not started: the import was interrupted (importing again resumes)", sum.NotStarted)) && !strings.HasSuffix(got, "; 1 log file not started: the import was interrupted (importing again resumes)") {
		t.Errorf("Line when interrupted = %q", got)
	}
}

// TestSummaryErr_ResumeHint: "importing again resumes at the line that
// stopped it" is said only when a file stopped at a line, and the advice
// on a line that does not parse only when one did; files never read (not
// regular, leading into the data dir) are not imported, nothing resumes.
func TestSummaryErr_ResumeHint(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.jsonl", "b.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := PlanImport(testFormat(), []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fifo := fmt.Errorf("read transcript: x.jsonl: %w (a FIFO)", hookspool.ErrNotRegular)
	private := fmt.Errorf("x.jsonl: %w /data: it is a hard link to /data/lock", ErrPrivate)
	line := &LineError{Path: "x.jsonl", Line: 3, Err: ErrSyntax}
	appendErr := errors.New("append: no space left on device")
	for _, tt := range []struct {
		name       string
		errs       []error
		resume     bool
		unparsable bool
	}{
		{"NotRegular", []error{fifo, fifo}, false, false},
		{"Private", []error{private, fifo}, false, false},
		{"Line", []error{line, fifo}, true, true},
		{"Append", []error{appendErr, private}, true, false},
	} {
		i := 0
		sum := p.Run(t.Context(), Runner[string]{Workers: 1, Import: func(_ context.Context, path string, _ func()) ([]FileResult, error) {
			i++
			return nil, tt.errs[i-1]
		}}, io.Discard)
		err := sum.Err("log", "")
		if err == nil {
			t.Fatalf("%s: no error", tt.name)
		}
		if got := strings.Contains(err.Error(), "importing again resumes"); got != tt.resume {
			t.Errorf("%s: %v; want the resume hint: %v", tt.name, err, tt.resume)
		}
		if got := strings.Contains(err.Error(), "--skip-invalid"); got != tt.unparsable {
			t.Errorf("%s: %v; want the advice on a line that does not parse: %v", tt.name, err, tt.unparsable)
		}
	}
}

// TestSummaryLine_Changed: files that changed under Logbook count none of
// their lines as already in the log; the summary says how many were
// truncated and rewritten and the lines imported from them before,
// which the log keeps.
func TestSummaryLine_Changed(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := PlanImport(testFormat(), []string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	diverged := func(path, change string, kept int) ([]FileResult, error) {
		de := &DivergedError{Path: path, Imported: events.Fingerprint{Line: kept}}
		if change == "rewritten" {
			de.Found.SHA256 = "ab"
		}
		if got := de.Change(); got != change {
			t.Fatalf("Change() = %q, want %q", got, change)
		}
		return []FileResult{{Path: path, Changed: change, Kept: kept}}, de
	}
	for _, tt := range []struct {
		name    string
		results map[string]func(string) ([]FileResult, error)
		want    string
	}{
		{"Truncated", map[string]func(string) ([]FileResult, error){
			"a.jsonl": func(p string) ([]FileResult, error) { return diverged(p, "truncated", 8) },
		}, "imported 3 logs: 6 lines appended, 6 already in the log; 1 stopped at an error (1 truncated under Logbook: the log keeps the 8 lines imported from it before)"},
		{"Both", map[string]func(string) ([]FileResult, error){
			"a.jsonl": func(p string) ([]FileResult, error) { return diverged(p, "truncated", 8) },
			"b.jsonl": func(p string) ([]FileResult, error) { return diverged(p, "truncated", 1) },
			"c.jsonl": func(p string) ([]FileResult, error) { return diverged(p, "rewritten", 4) },
		}, "imported 1 log: 2 lines appended, 2 already in the log; 3 stopped at an error (2 truncated and 1 rewritten under Logbook: the log keeps the 13 lines imported from them before)"},
	} {
		sum := p.Run(t.Context(), Runner[string]{Workers: 1, Import: func(_ context.Context, path string, _ func()) ([]FileResult, error) {
			if f, ok := tt.results[filepath.Base(path)]; ok {
				return f(path)
			}
			return []FileResult{{Path: path, Appended: 2, Skipped: 2, Lines: 4}}, nil
		}}, io.Discard)
		if got := sum.Line("log"); got != tt.want {
			t.Errorf("%s: Line\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}
