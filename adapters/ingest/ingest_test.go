package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
	"mvdan.cc/sh/v3/shell"
)

func TestHeadUUID(t *testing.T) {
	for _, c := range []struct{ head, want string }{
		{`{"type":"user","uuid":"u2","message":{"content":"xxx`, "u2"},
		{`{"message":{"uuid":"nested","content":[{"uuid":"deeper"}]},"uuid":"top","x":"`, "top"},
		{`{"message":{"uuid":"nested","content":"xxxx`, ""},
		{`{"a":[1,{"uuid":"in-array"}],"uuid":"u"}`, "u"},
		{`{"uuid":"cut-in-the-mid`, ""},
		{`{"uuid":7}`, ""},
		{`{"a":"uuid","b":"uuid"}`, ""},
		{`["uuid","u"]`, ""},
		{``, ""},
		{`not json`, ""},
	} {
		if got := headUUID([]byte(c.head)); got != c.want {
			t.Errorf("headUUID(%q) = %q, want %q", c.head, got, c.want)
		}
	}
}

// TestCheckOpened_SymlinkIntoDataDir: the check of an opened file looks
// at where the descriptor leads, not at the name it was opened by: a
// file opened through a symlink into the data dir (as a path swapped
// after CheckPrivate passed it would be) is refused, in CheckPrivate's
// words; an import whose path turns into such a link between the path
// check and its open reads nothing of it.
func TestCheckOpened_SymlinkIntoDataDir(t *testing.T) {
	data, creds, in, l := privateSetup(t)
	const sid = "c0000004-0000-4000-8000-000000000004"
	dir := t.TempDir()
	path := filepath.Join(dir, sid+".jsonl")
	ingesttest.WriteFile(t, path, ingesttest.PrivateLine(sid, "u1"))
	dirs := []string{data}

	// At check time the path is a regular transcript…
	if err := CheckPrivate(path, dirs); err != nil {
		t.Fatal(err)
	}
	// …at open time, a symlink into the data dir.
	ingesttest.SwapTo(t, path, creds)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = CheckOpened(f, path, dirs)
	if !errors.Is(err, ErrPrivate) || !strings.HasPrefix(err.Error(), path+": points into the data dir "+data+" (it resolves to ") {
		t.Fatalf("CheckOpened: %v, want %s: points into the data dir %s (it resolves to …)", err, path, data)
	}
	// The import past its path check (importFileAt, which ImportFile
	// runs once CheckPrivate passed) opens the link and stops there.
	agg := events.Aggregate{Kind: events.KindSession, ID: sid}
	if _, _, err := in.importFileAt(t.Context(), path, agg, toyLines(), nil); !errors.Is(err, ErrPrivate) {
		t.Fatalf("import of a path swapped after its check: %v, want ErrPrivate", err)
	}
	ingesttest.NoneLogged(t, l, sid)
	ingesttest.NoneLogged(t, l, ingesttest.PrivateSession)
	// Without private dirs the same file passes.
	if err := CheckOpened(f, path, nil); err != nil {
		t.Fatal(err)
	}
}

// The command a divergence tells to run takes the path back as one word
// in a shell: quoted, never split or expanded, never read as a flag.
func TestDivergedError_PathIsOneShellWord(t *testing.T) {
	for path, want := range map[string]string{
		"/tmp/a.jsonl": "/tmp/a.jsonl",
		"/tmp/w sp/pro ject's \"q\" ü$(x)/a `b`.jsonl": "/tmp/w sp/pro ject's \"q\" ü$(x)/a `b`.jsonl",
		"-rf.jsonl": "./-rf.jsonl",
	} {
		msg := (&DivergedError{Path: path, Session: "s1", NewSession: "s1-r1", Command: "logbook import claude"}).Error()
		_, cmd, _ := strings.Cut(msg, "run: ")
		cmd, _, _ = strings.Cut(cmd, " (it goes")
		words, err := shell.Fields(cmd, func(string) string { return "EXPANDED" })
		if err != nil || len(words) != 5 || words[4] != want {
			t.Errorf("%q: the shell reads %q as %q (%v), want its last word %q", path, cmd, words, err, want)
		}
	}
}
