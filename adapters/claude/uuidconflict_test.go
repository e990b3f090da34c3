package claude

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// TestImportFile_UUIDConflict: a line whose uuid is an earlier line's
// but whose bytes are not that line's is no copy: the import stops there
// with a *LineError naming the file, the line, the uuid and the earlier
// line (in another file or the same one), the lines before it imported
// and nothing of it appended, again on every import; with SkipInvalid it
// is recorded once as an invalid line without its uuid or signals, with a
// warning, and the lines after it are imported. A line that repeats an
// earlier one byte for byte is still a copy.
func TestImportFile_UUIDConflict(t *testing.T) {
	t.Parallel()
	l := ingesttest.OpenLog(t)
	in := newTestIngester(t, l)
	agg, _ := SessionAggregate("s-1", "")
	orig := filepath.Join(t.TempDir(), "s-1.jsonl")
	other := filepath.Join(t.TempDir(), "s-1.other.jsonl")
	head := []string{fxUser("u1", "", "hi"), fxAssistant("a2", "u1", "hello")}
	ingesttest.AppendFile(t, orig, head...)
	ingesttest.AppendFile(t, other, append(head, fxAssistant("a2", "u1", "something else"), fxUser("u4", "a2", "next"))...)
	if r, err := in.ImportFile(t.Context(), orig, agg, nil); err != nil || r.Appended != 2 {
		t.Fatalf("original: %+v, %v", r, err)
	}
	lines := func() map[string][]*events.Observation {
		t.Helper()
		recs, _, err := l.Load(t.Context(), agg)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string][]*events.Observation{}
		for _, r := range recs {
			if o, ok := events.Observed(r.Data); ok && o.Line > 0 {
				m[filepath.Base(o.Path)] = append(m[filepath.Base(o.Path)], o)
			}
		}
		return m
	}
	var seqs []uint64
	for range 2 { // importing again meets it again, and appends nothing more
		r, err := in.ImportFile(t.Context(), other, agg, nil)
		lerr, ok := errors.AsType[*ingest.LineError](err)
		if !ok || !errors.Is(err, ingest.ErrUUIDConflict) || lerr.Line != 3 {
			t.Fatalf("conflicting line: %+v, %v; want a *LineError at line 3 wrapping ErrUUIDConflict", r, err)
		}
		for _, want := range []string{other + ":3:", "uuid a2", "line 2 of " + orig} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if r.Appended != 0 || r.Lines != 2 {
			t.Errorf("appended %d, cursor %d; want 0, 2 (the copies before it only)", r.Appended, r.Lines)
		}
		if got := lines()[filepath.Base(other)]; len(got) != 1 || got[0].Kind != events.KindCopy || got[0].Line != 2 {
			t.Errorf("the other file's observations: %+v; want one copy of lines 1-2", got)
		}
		now, _ := l.LastSeq(t.Context())
		seqs = append(seqs, now)
	}
	if seqs[1] != seqs[0] {
		t.Errorf("the second import moved the log from %d to %d", seqs[0], seqs[1])
	}

	// The same file's earlier line.
	agg2, _ := SessionAggregate("s-2", "")
	same := filepath.Join(t.TempDir(), "s-2.jsonl")
	ingesttest.AppendFile(t, same, strings.ReplaceAll(fxUser("u1", "", "hi"), "s-1", "s-2"),
		strings.ReplaceAll(fxUser("u1", "", "hi again"), "s-1", "s-2"))
	r, err := in.ImportFile(t.Context(), same, agg2, nil)
	if !errors.Is(err, ingest.ErrUUIDConflict) || !strings.Contains(err.Error(), same+":2:") || !strings.Contains(err.Error(), "uuid u1 is that of line 1 above") || r.Appended != 1 || r.Lines != 1 {
		t.Errorf("conflict within one file: %+v, %v", r, err)
	}

	// A fork's copy of a line with its forkedFrom stamp, written again
	// without it and with its parentUuid cleared (as Claude Code's
	// /branch may), says the same: a copy.
	agg4, _ := SessionAggregate("s-4", "")
	branch := filepath.Join(t.TempDir(), "s-4.jsonl")
	a2 := strings.ReplaceAll(fxAssistant("a2", "u1", "hello"), "s-1", "s-4")
	stamped := strings.Replace(a2, "{", `{"forkedFrom":{"sessionId":"s-0","messageUuid":"a2"},`, 1)
	ingesttest.AppendFile(t, branch, strings.ReplaceAll(fxUser("u1", "", "hi"), "s-1", "s-4"), stamped,
		strings.Replace(a2, `"parentUuid":"u1"`, `"parentUuid":null`, 1),
		strings.ReplaceAll(fxUser("u4", "a2", "next"), "s-1", "s-4"))
	r, err = in.ImportFile(t.Context(), branch, agg4, nil)
	if err != nil || r.Appended != 3 || r.Lines != 4 || len(r.Warnings) != 0 {
		t.Errorf("a fork's stamped copy written again: %+v, %v; want lines 1, 2 and 4 appended, 3 a copy", r, err)
	}

	// A uuid written as the identity of a line without one (its number
	// and the SHA-256 of its bytes) is no copy of that line either.
	agg3, _ := SessionAggregate("s-3", "")
	forged := filepath.Join(t.TempDir(), "s-3.jsonl")
	first := `{"type":"queue-operation","operation":"enqueue","timestamp":"2026-04-24T19:18:59.000Z","sessionId":"s-3"}`
	sum := sha256.Sum256([]byte(first))
	id := "line:1:" + hex.EncodeToString(sum[:])
	ingesttest.AppendFile(t, forged, first+"\n", strings.ReplaceAll(fxUser(id, "", "hi"), "s-1", "s-3"))
	r, err = in.ImportFile(t.Context(), forged, agg3, nil)
	if !errors.Is(err, ingest.ErrUUIDConflict) || !strings.Contains(err.Error(), forged+":2:") || r.Lines != 1 {
		t.Errorf("a uuid that is another line's identity: %+v, %v", r, err)
	}

	// Passed with SkipInvalid: recorded once, as an invalid line.
	skip, err := NewIngester(IngestConfig{Log: l, Host: "test", SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err = skip.ImportFile(t.Context(), other, agg, nil)
	if err != nil || r.Appended != 2 || r.Lines != 4 {
		t.Fatalf("skip-invalid: %+v, %v; want lines 3 and 4 appended", r, err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], other+":3:") || !strings.Contains(r.Warnings[0], "uuid a2") {
		t.Errorf("skip-invalid warnings: %q", r.Warnings)
	}
	got := lines()[filepath.Base(other)]
	if len(got) != 3 {
		t.Fatalf("the other file's observations: %+v", got)
	}
	if o := got[1]; o.Line != 3 || o.Kind != "invalid" || o.UUID != "" || len(o.Signals) != 0 || !strings.Contains(strings.Join(o.Problems, ";"), "uuid a2") {
		t.Errorf("the conflicting line's record: %+v", o)
	}
	if o := got[2]; o.Line != 4 || o.UUID != "u4" || o.Kind != "user" {
		t.Errorf("the line after it: %+v", o)
	}
	for _, imp := range []*Ingester{skip, in} {
		if r, err := imp.ImportFile(t.Context(), other, agg, nil); err != nil || r.Appended != 0 {
			t.Errorf("importing again: %+v, %v; want nothing appended", r, err)
		}
	}
}
