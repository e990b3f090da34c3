package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/cmd/logbook/internal/bench"
)

// An import interrupted (SIGINT) part way, through serve, says what the
// log holds: the appends under way when the signal came are waited for,
// so its "appended" is exactly what the next import finds already in the
// log; every file is accounted for (read to its end, stopped part way or
// not started), none is reported as stopped at an error; it exits 130
// saying it was interrupted; and each line is in the log once.
func TestImportInterruptedCountsWhatTheLogHolds(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := &soak{t: t, bin: soakBuild(t), data: filepath.Join(root, "data"), dir: filepath.Join(root, "projects")}
	t.Cleanup(s.procs.killAll)
	const files, lines = 300, 20
	ts, err := bench.NewSynthTranscripts(s.dir, files, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		if err := tr.Grow(lines, false); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	s.startServe(ctx)
	before, err := s.status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ch, out, err := s.start(ctx, nil, "import", "claude", s.dir)
	if err != nil {
		t.Fatal(err)
	}
	// Interrupted once it is under way: once the log has grown by a few
	// files' events, long before its end (some 50 events a file).
	waitFor(t, time.Minute, "the import to append", func() bool {
		st, err := s.status(ctx)
		return err == nil && st.LastSeq > before.LastSeq+300
	}, out.String)
	if err := ch.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch.gone:
	case <-time.After(time.Minute):
		t.Fatalf("the import runs on a minute after SIGINT:\n%s", tailString(out.String(), 2000))
	}
	first := out.String()
	if ee, ok := errors.AsType[*exec.ExitError](ch.err); !ok || ee.ExitCode() != 130 {
		t.Errorf("interrupted import: %v, want exit status 130:\n%s", ch.err, tailString(first, 2000))
	}
	if !strings.Contains(first, "import claude interrupted by SIGINT") {
		t.Errorf("the interrupted import does not say it was interrupted:\n%s", tailString(first, 2000))
	}
	if strings.Contains(first, "error:") {
		t.Errorf("the interrupt is reported file by file, as errors:\n%s", tailString(first, 2000))
	}
	summary := regexp.MustCompile(`(?m)^imported (\d+) transcript files?(?: and (\d+) in part)?: (\d+) lines? appended( \(perhaps more: the answer to an append under way at the interrupt was lost\))?, (\d+) already in the log(?:; (\d+) stopped part way)?(?: and (\d+) not started|; (\d+) transcript files? not started)?: the import was interrupted \(importing again resumes\)$`).FindStringSubmatch(first)
	if summary == nil {
		t.Fatalf("no summary of an interrupted import:\n%s", tailString(first, 2000))
	}
	t.Logf("interrupted: %s", summary[0])
	n := func(i int) int {
		v, _ := strconv.Atoi(summary[i])
		return v
	}
	whole, stopped, notStarted := n(1), n(6), n(7)+n(8)
	// An append whose answer the interrupt cut off may have landed: the
	// summary says so, and the lines it held are then found in the log
	// by the next import, not counted by this one.
	answerLost := summary[4] != ""
	if whole+stopped+notStarted != files {
		t.Errorf("%d files read to their end, %d stopped part way and %d not started: %d, want the %d files accounted for\n%s", whole, stopped, notStarted, whole+stopped+notStarted, files, summary[0])
	}
	appended := n(3)
	if appended == 0 || appended == files*lines {
		t.Errorf("the interrupt came before any line or after the last: %s", summary[0])
	}

	// The next import finds exactly what the first said it appended, and
	// appends the rest.
	again, err := s.run(ctx, nil, "import", "claude", s.dir)
	second := string(again)
	if err != nil {
		t.Fatalf("import after the interrupt: %v\n%s", err, tailString(second, 2000))
	}
	already := summaryCount(t, second, `(\d+) already in the log`)
	if already != appended && !(answerLost && already > appended) {
		t.Errorf("the next import finds %d lines already in the log; the interrupted one said it appended %d:\n%s\n%s", already, appended, summary[0], lastLineOf(second))
	}
	if rest := summaryCount(t, second, `(\d+) lines? appended`); rest != files*lines-already {
		t.Errorf("the next import appended %d lines, want the %d not in the log before it", rest, files*lines-already)
	}
	if total, lost, doubled := s.linesOnce(ctx, ts); lost > 0 || doubled > 0 {
		t.Errorf("lost %d, doubled %d of %d lines", lost, doubled, total)
	}
}
