package claude

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
)

// TestDiscover builds Claude Code's projects layout and finds sessions
// and their subagents in it.
func TestDiscover(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	proj := filepath.Join(root, "projects", "-home-user-project")
	const s1, s2 = "11111111-0000-4000-8000-000000000001", "22222222-0000-4000-8000-000000000002"
	ingesttest.WriteFile(t, filepath.Join(proj, s1+".jsonl"), "{}\n")
	ingesttest.WriteFile(t, filepath.Join(proj, s1, "subagents", "agent-a02.jsonl"), "{}\n")
	ingesttest.WriteFile(t, filepath.Join(proj, s1, "subagents", "agent-a01.jsonl"), "{}\n")
	ingesttest.WriteFile(t, filepath.Join(proj, s1, "subagents", "agent-a01.meta.json"), "{}\n")
	ingesttest.WriteFile(t, filepath.Join(proj, s1, "subagents", "renamed.jsonl"), "{\"type\":\"user\"}\n{\"type\":\"user\",\"agentId\":\"a03\"}\n")
	ingesttest.WriteFile(t, filepath.Join(proj, s1, "tool-results", "toolu_1.txt"), "output")
	ingesttest.WriteFile(t, filepath.Join(proj, s2+".jsonl"), "{}\n")
	ingesttest.WriteFile(t, filepath.Join(root, "projects", "-home-user-other", "notes.txt"), "x")
	// Subagents whose parent transcript is gone.
	ingesttest.WriteFile(t, filepath.Join(root, "projects", "-home-user-other", "33333333", "subagents", "agent-b01.jsonl"), "{}\n")

	sub := func(session, id, name string) Subagent {
		return Subagent{Path: filepath.Join(proj, session, "subagents", name), AgentID: id, SessionID: session}
	}
	want := []Transcript{
		{SessionID: "33333333", Subagents: []Subagent{{Path: filepath.Join(root, "projects", "-home-user-other", "33333333", "subagents", "agent-b01.jsonl"), AgentID: "b01", SessionID: "33333333"}}},
		{Path: filepath.Join(proj, s1+".jsonl"), SessionID: s1, Subagents: []Subagent{
			sub(s1, "a01", "agent-a01.jsonl"), sub(s1, "a02", "agent-a02.jsonl"), sub(s1, "a03", "renamed.jsonl"),
		}},
		{Path: filepath.Join(proj, s2+".jsonl"), SessionID: s2},
	}
	got, err := Discover(filepath.Join(root, "projects"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Discover(projects) (-want +got):\n%s", diff)
	}

	t.Run("a transcript file brings its subagents", func(t *testing.T) {
		got, err := Discover(filepath.Join(proj, s1+".jsonl"), filepath.Join(proj, s1+".jsonl"), filepath.Join(proj, s1, "tool-results", "toolu_1.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[1:2], got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("subagents directory alone", func(t *testing.T) {
		got, err := Discover(filepath.Join(proj, s1, "subagents"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Path != "" || got[0].SessionID != s1 || len(got[0].Subagents) != 3 {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("copied session beside its subagents", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "scenario")
		ingesttest.WriteFile(t, filepath.Join(dir, "transcript.jsonl"), "{}\n")
		ingesttest.WriteFile(t, filepath.Join(dir, "subagents", "agent-c01.jsonl"), "{}\n")
		got, err := Discover(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := []Transcript{{Path: filepath.Join(dir, "transcript.jsonl"), SessionID: "transcript", Subagents: []Subagent{
			{Path: filepath.Join(dir, "subagents", "agent-c01.jsonl"), AgentID: "c01", SessionID: "transcript"},
		}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("missing input", func(t *testing.T) {
		_, err := Discover(filepath.Join(root, "nowhere"))
		if err == nil || !strings.Contains(err.Error(), "nowhere") {
			t.Errorf("error %v, want one naming the path", err)
		}
	})
}
