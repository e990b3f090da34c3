package claude

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// writeOversized appends to path a user line whose tool result's stdout
// holds size bytes, longer than MaxLineBytes when size is, written a MiB
// at a time, and returns the line's length and SHA-256 (without its
// newline).
func writeOversized(t *testing.T, path string, size int) (int64, string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	var n int64
	put := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(s))
		n += int64(len(s))
	}
	put(`{"type":"user","uuid":"u2","parentUuid":"u1","sessionId":"s-1","timestamp":"2026-04-24T19:19:01.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"big"}]},"toolUseResult":{"stdout":"`)
	chunk := strings.Repeat("x", 1<<20)
	for left := size; left > 0; left -= len(chunk) {
		put(chunk[:min(left, len(chunk))])
	}
	put(`"}}`)
	if _, err := f.WriteString("\n"); err != nil {
		t.Fatal(err)
	}
	return n, hex.EncodeToString(h.Sum(nil))
}

// oversizedRig skips the test in -short mode, as it writes and reads an
// 80 MiB line, and otherwise returns a log, an ingester on it and a
// temporary directory for the transcripts.
func oversizedRig(t *testing.T) (*natslog.Log, *Ingester, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("writes and reads an 80 MiB line")
	}
	l := ingesttest.OpenLog(t)
	return l, newTestIngester(t, l), t.TempDir()
}

// TestImportFile_OversizedLine imports a transcript with a line over
// MaxLineBytes: the line is recorded cut, with its size and SHA-256, the
// lines after it are imported, and importing again appends nothing.
func TestImportFile_OversizedLine(t *testing.T) {
	t.Parallel()
	l, in, dir := oversizedRig(t)
	path := filepath.Join(dir, "s-1.jsonl")
	agg, _ := SessionAggregate("s-1", "")
	ctx := t.Context()

	ingesttest.AppendFile(t, path, fxUser("u1", "", "hi"))
	size, sum := writeOversized(t, path, 80<<20)
	// The long line is the file's last: it is imported, and importing
	// again finds the file unchanged (its fingerprint holds).
	r, err := in.ImportFile(ctx, path, agg, nil)
	if err != nil || r.Appended != 2 || r.Lines != 2 {
		t.Fatalf("import: %+v, %v; want 2 lines", r, err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "s-1.jsonl:2: line too long") {
		t.Errorf("warnings %q, want one naming line 2", r.Warnings)
	}
	r, err = in.ImportFile(ctx, path, agg, nil)
	if err != nil || r.Appended != 0 || r.Skipped != 2 {
		t.Fatalf("import again: %+v, %v; want nothing new", r, err)
	}
	ingesttest.AppendFile(t, path, fxAssistant("a3", "u2", "done"), fxUser("u4", "a3", "next"))
	r, err = in.ImportFile(ctx, path, agg, nil)
	if err != nil || r.Appended != 2 || r.Lines != 4 {
		t.Fatalf("import of the lines after it: %+v, %v; want 2 more", r, err)
	}
	r, err = in.ImportFile(ctx, path, agg, nil)
	if err != nil || r.Appended != 0 || r.Lines != 4 {
		t.Fatalf("import again: %+v, %v; want nothing new", r, err)
	}

	recs, _, err := l.Load(ctx, agg)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, rec := range recs {
		o, ok := events.Observed(rec.Data)
		if !ok || o.Line == 0 {
			continue
		}
		lines = append(lines, o.Line)
		if o.Line != 2 {
			continue
		}
		if o.Kind != "invalid" || len(o.Signals) != 0 || len(o.Problems) != 1 || !strings.Contains(o.Problems[0], "line too long") {
			t.Errorf("line 2: kind %q, signals %v, problems %q", o.Kind, o.Signals, o.Problems)
		}
		if o.Cut == nil || o.Cut.Size != size || o.Cut.SHA256 != sum || o.Cut.Kept != len(o.Raw) || len(o.Raw) == 0 || len(o.Raw) > 64<<10 {
			t.Errorf("line 2: cut %+v, raw %d bytes; want size %d, sha256 %s", o.Cut, len(o.Raw), size, sum)
		}
		if !strings.HasPrefix(o.Raw, `{"type":"user","uuid":"u2"`) {
			t.Errorf("line 2: raw starts %.40q", o.Raw)
		}
		if o.Fingerprint == nil || o.Fingerprint.SHA256 != sum || o.Fingerprint.End-o.Fingerprint.Offset != size+1 {
			t.Errorf("line 2: fingerprint %+v", o.Fingerprint)
		}
	}
	if want := []int{1, 2, 3, 4}; !slices.Equal(lines, want) {
		t.Errorf("lines observed %v, want %v", lines, want)
	}
}

// TestImportFile_OversizedParent imports, in one pass, a line over
// MaxLineBytes and a line whose parent it is: with the parent's uuid in
// the kept head, the child's link holds; with it past the head, the child
// is told which line may be its parent rather than that none is.
func TestImportFile_OversizedParent(t *testing.T) {
	t.Parallel()
	_, in, dir := oversizedRig(t)
	ctx := t.Context()

	path := filepath.Join(dir, "s-1.jsonl")
	agg, _ := SessionAggregate("s-1", "")
	ingesttest.AppendFile(t, path, fxUser("u1", "", "hi"))
	writeOversized(t, path, 80<<20) // uuid u2 first, in the head
	ingesttest.AppendFile(t, path, fxAssistant("a3", "u2", "done"))
	r, err := in.ImportFile(ctx, path, agg, nil)
	if err != nil || r.Appended != 3 {
		t.Fatalf("import: %+v, %v; want 3 lines", r, err)
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "parentUuid") {
			t.Errorf("warning %q: u2 is line 2's uuid, in its head", w)
		}
	}

	path = filepath.Join(dir, "s-2.jsonl")
	agg, _ = SessionAggregate("s-2", "")
	ingesttest.AppendFile(t, path, fxUser("v1", "", "hi"))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	// The uuid after 80 MiB of content, as Claude Code writes its members.
	big := strings.Repeat("x", 80<<20)
	if _, err := f.WriteString(`{"type":"user","parentUuid":"v1","sessionId":"s-2","message":{"role":"user","content":"` + big + `"},"uuid":"v2","timestamp":"2026-04-24T19:19:01.000Z"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ingesttest.AppendFile(t, path, fxAssistant("a3", "v2", "done"), fxAssistant("a4", "nowhere", "done"))
	r, err = in.ImportFile(ctx, path, agg, nil)
	if err != nil || r.Appended != 4 {
		t.Fatalf("import: %+v, %v; want 4 lines", r, err)
	}
	var got []string
	for _, w := range r.Warnings {
		if strings.Contains(w, "parentUuid") {
			got = append(got, w)
		}
	}
	want := []string{
		path + ":3: parentUuid v2 points to no earlier line whose uuid is known (line 2, over the size limit, was recorded without it and may be the parent)",
		path + ":4: parentUuid nowhere points to no earlier line whose uuid is known (line 2, over the size limit, was recorded without it and may be the parent)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("parent warnings:\n got %q\nwant %q", got, want)
	}
}
