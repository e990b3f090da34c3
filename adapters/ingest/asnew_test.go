package ingest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestDivergedError_AsNewPasted: the command a DivergedError suggests
// names the file it was about when pasted into bash, whatever the path
// holds (a space, a quote, a dash first, a newline, a tab, an escape, a
// byte that is not UTF-8); a path a POSIX shell quotes keeps its POSIX
// quoting, and only one that needs escapes is quoted $'…'.
func TestDivergedError_AsNewPasted(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, c := range []struct{ path, word string }{
		{"/tmp/plain.jsonl", "/tmp/plain.jsonl"},
		{"/tmp/a b/it's.jsonl", `"/tmp/a b/it's.jsonl"`},
		{"-x.jsonl", "./-x.jsonl"},
		{"/tmp/line\nbreak.jsonl", `$'/tmp/line\nbreak.jsonl'`},
		{"/tmp/tab\there.jsonl", `$'/tmp/tab\there.jsonl'`},
		{"/tmp/esc\x1b[31m.jsonl", `$'/tmp/esc\x1b[31m.jsonl'`},
		{"/tmp/latin\xe9.jsonl", `$'/tmp/latin\xe9.jsonl'`},
	} {
		e := &DivergedError{Path: c.path, Session: "s1", NewSession: "s1-r1", Command: "logbook import claude",
			Imported: events.Fingerprint{Line: 2}, Found: events.Fingerprint{Line: 1}}
		msg := e.Error()
		_, rest, ok := strings.Cut(msg, "run: logbook import claude --as-new ")
		word, _, ok2 := strings.Cut(rest, " (it goes to session s1-r1)")
		if !ok || !ok2 {
			t.Errorf("%q: no --as-new command in %q", c.path, msg)
			continue
		}
		if word != c.word {
			t.Errorf("%q: quoted %s, want %s", c.path, word, c.word)
		}
		want := c.path
		if strings.HasPrefix(want, "-") {
			want = "./" + want
		}
		out, err := exec.Command(bash, "-c", "printf %s "+word).Output()
		if got := string(out); err != nil || got != want {
			t.Errorf("%q: bash reads %s as %q (%v), want %q", c.path, word, got, err, want)
		}
	}
}
