package term

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/check"
)

// CheckVerdict returns one line saying how check run r ended (or that it
// runs), its fields made safe (Field): "check run <id> passed commit
// <commit>", "… failed (exit status 3)", "… failed: timed out …",
// "… error: <reason>", "… cancelled: <reason>".
func CheckVerdict(r check.State) string { return checkVerdict(r, Field) }

// checkVerdict is CheckVerdict with each field passed through Field
// (esc), or as it is for a caller that escapes the whole line.
func checkVerdict(r check.State, Field func(string) string) string {
	s := fmt.Sprintf("check run %s %s", Field(r.ID), Field(r.Status))
	switch r.Status {
	case events.CheckPassed:
		s += " commit " + Field(Dash(r.Commit))
		if !r.Clean {
			s += " with uncommitted changes"
		}
	case events.CheckFailed:
		if r.TimedOut {
			s += ": timed out: " + Field(r.Reason)
		} else if r.ExitCode != nil {
			s += fmt.Sprintf(" (exit status %d)", *r.ExitCode)
		}
	case events.CheckError, events.CheckCancelled:
		s += ": " + Field(r.Reason)
	}
	return s
}

// CheckRuns writes a table of check runs, in the order given: id,
// status, exit status, timed out, commit (short), clean, trigger, when
// it started, its duration and how many pushes it allowed (the pre-push
// hook's permissions, not pushes known to have reached a remote). Errors
// are w's.
func CheckRuns(w io.Writer, runs []check.State) error {
	rows := make([][]string, len(runs))
	for i, r := range runs {
		exit := "-"
		if r.ExitCode != nil {
			exit = strconv.Itoa(*r.ExitCode)
		}
		commit := r.Commit
		if len(commit) > 12 {
			commit = commit[:12]
		}
		rows[i] = []string{r.ID, r.Status, exit, strconv.FormatBool(r.TimedOut), Dash(commit), strconv.FormatBool(r.Clean), r.Trigger,
			r.StartedAt.Format(time.RFC3339), (time.Duration(r.DurationMS) * time.Millisecond).String(), strconv.Itoa(len(r.Pushes))}
	}
	return Rows(w, []string{"RUN", "STATUS", "EXIT", "TIMED_OUT", "COMMIT", "CLEAN", "TRIGGER", "STARTED", "TOOK", "PUSHES_ALLOWED"}, rows)
}
