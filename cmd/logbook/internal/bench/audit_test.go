package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/worker"
)

// TestAuditBreakdown reads the stage files of three audits: each stage
// is timed from the mark before it (the first from the process's start,
// the exit from the last mark), the summed leaf checks are their own
// line, and each is the median over the audits; the peak resident set
// is read beside them, no stage.
func TestAuditBreakdown(t *testing.T) {
	base := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var times []auditTimes
	for i, d := range []int{3, 1, 2} { // the audit of d=2 is the median of each stage
		b := base.Add(time.Duration(i) * time.Minute)
		ms := func(n int) time.Time { return b.Add(time.Duration(n*d) * time.Millisecond) }
		var file strings.Builder
		for j, mark := range []string{AuditStarted, AuditConnected, AuditJudgment, AuditResolved,
			worker.AuditSessionRead, worker.AuditCommandsFound, worker.AuditFolded, AuditRendered} {
			fmt.Fprintf(&file, "%s %d\n", mark, ms(j+1).UnixNano())
		}
		fmt.Fprintf(&file, "%s %d\n", AuditVerified, 7*d*int(time.Millisecond))
		fmt.Fprintf(&file, "%s %d\n", AuditPeakResident, 1000*d)
		path := filepath.Join(t.TempDir(), "stages")
		if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		at := auditTimes{begin: b, end: ms(10)}
		if err := readAuditTimes(path, &at); err != nil {
			t.Fatal(err)
		}
		if at.peakKiB != int64(1000*d) {
			t.Errorf("peak resident read as %d KiB, want %d", at.peakKiB, 1000*d)
		}
		times = append(times, at)
	}
	got := auditBreakdown(times)
	var want []StageTime
	for _, s := range auditStages {
		ms := 2.0
		switch s.mark {
		case AuditVerified:
			ms = 14
		case "":
			ms = 4 // from the 8th mark to the exit at 10
		}
		want = append(want, StageTime{Stage: s.stage, P50ms: ms, N: 3})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("breakdown (-want +got):\n%s", diff)
	}
}

// TestReadAuditTimes_BadLine: a line that is not "<stage> <ns>" is an
// error naming the file and the line.
func TestReadAuditTimes_BadLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stages")
	if err := os.WriteFile(path, []byte("started 1\nconnected soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var at auditTimes
	err := readAuditTimes(path, &at)
	if err == nil || !strings.Contains(err.Error(), path+": line 2") || !strings.Contains(err.Error(), `"connected soon"`) {
		t.Errorf("readAuditTimes = %v, want an error naming %s, line 2 and its text", err, path)
	}
}

// TestAuditUsage reads what a real child process used from its wait
// (usageOf) and says the median of each measure on its own
// (medianUsage): the CPU of one audit, the faults of another.
func TestAuditUsage(t *testing.T) {
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skipf("true: %v", err)
	}
	u, ok := usageOf(c.ProcessState)
	if !ok || u.minflt <= 0 {
		t.Fatalf("usage of true: %+v, %v; want its page faults", u, ok)
	}
	us := []auditUsage{
		{cpu: 90 * time.Millisecond, minflt: 12000, peakKiB: 80 * 1024},
		{cpu: 120 * time.Millisecond, minflt: 9000, peakKiB: 100 * 1024},
		{cpu: 100 * time.Millisecond, minflt: 15000, peakKiB: 90 * 1024},
	}
	want := "took 100.0 ms of CPU (user and system), 12,000 minor page faults (pages first touched), peak resident 90.0 MiB"
	if got := medianUsage(us); got != want {
		t.Errorf("medianUsage:\n got %s\nwant %s", got, want)
	}
	for i := range us {
		us[i].peakKiB = 0
	}
	if got := medianUsage(us); strings.Contains(got, "resident") {
		t.Errorf("medianUsage of processes that said no peak: %s", got)
	}
}

// TestItemCounter counts "\n#" across writes cut anywhere, as
// bytes.Count over the whole text does.
func TestItemCounter(t *testing.T) {
	text := []byte("# a\n#b\nx\n#c\n\n#d\n#")
	want := bytes.Count(text, []byte("\n#"))
	for cut := range len(text) + 1 {
		for cut2 := cut; cut2 <= len(text); cut2++ {
			var c itemCounter
			c.Write(text[:cut])
			c.Write(text[cut:cut2])
			c.Write(text[cut2:])
			if c.items != want {
				t.Fatalf("cut at %d and %d: %d items, want %d", cut, cut2, c.items, want)
			}
		}
	}
}
