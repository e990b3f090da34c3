package claude

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTranscriptBytes: a transcript weighs its file and its subagents'
// files together, plus one; a file that is not there weighs nothing.
func TestTranscriptBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	main, sub := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "agent-a.jsonl")
	if err := os.WriteFile(main, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sub, make([]byte, 20), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := Transcript{Path: main, Subagents: []Subagent{{Path: sub}, {Path: filepath.Join(dir, "gone.jsonl")}}}
	if got := transcriptBytes(tr); got != 121 {
		t.Errorf("transcriptBytes = %d, want 121", got)
	}
	if got := transcriptBytes(Transcript{}); got != 1 {
		t.Errorf("transcriptBytes of no files = %d, want 1", got)
	}
}
