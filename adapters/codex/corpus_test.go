package codex

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
)

// explained holds, per scenario, why our final phase or arc differs from
// the peer's, where it does. The peer debounces (a phase held under 2 s
// is coalesced away) and drives some phases from channels that are not in
// the rollout; Logbook decides every line.
var explained = map[string]string{
	"2-1_basic-turn": "the peer's debounce coalesced the 1.6 s turn (its arc never leaves ready); " +
		"we record ready>working>ready from task_started and task_complete; both end ready",
	"2-19_tool-gate-permission-prompt": "the peer's waiting comes from Codex's HTTP permission hook, which is not in the rollout " +
		"(the approval overlay is never written to it); from the rollout alone the second exec call is open, so we end working; " +
		"a notify or an exec_approval_request line would move it to waiting (TestLine_ApprovalWaits)",
	"2-20_interrupted-turn": "the peer misses turn_aborted and the second turn's task_complete (its known_failing note); " +
		"we end the first turn on turn_aborted and the second on task_complete, ending ready as the spec expects",
	"01-example-session":          "legacy rollout without turn markers: both stay working after the last assistant message",
	"2-2_auto-executed-tool-call": "",
	"fork-conversation":           "",
}

// malformedNote explains the lines the import skips: the recordings'
// redaction wrote "\user@example.com" into the AGENTS.md context message
// (an invalid \u escape), so that line is not JSON. The import runs with
// --skip-invalid and records it without signals; that message yields none
// anyway.
const malformedNote = "the recording's redaction left an invalid \\u escape in its AGENTS.md context line; recorded without signals (--skip-invalid)"

// TestCorpus_Agreement imports every recorded rollout and prints, for each
// scenario, our final phase and arc beside the peer's golden ones. Every
// difference must be explained above. A second import appends nothing.
func TestCorpus_Agreement(t *testing.T) {
	dir := ingesttest.Corpus(t, "codex")
	// The recordings are named transcript.jsonl, not rollout-*.jsonl:
	// named files are taken as they are.
	all, _ := filepath.Glob(filepath.Join(dir, "*", "transcript.jsonl"))
	rollouts, err := Discover(all...)
	if err != nil {
		t.Fatal(err)
	}
	if len(rollouts) == 0 {
		t.Skip("no rollouts in the corpus")
	}
	l := ingesttest.OpenLog(t)
	in, err := NewIngester(IngestConfig{Log: l, Host: "test", SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%-34s %-8s %-8s %-7s %-7s %s", "scenario", "ours", "peer", "final", "arc", "ours | peer")
	for _, f := range rollouts {
		scenario := filepath.Base(filepath.Dir(f))
		r, err := in.ImportFile(t.Context(), f, nil)
		if err != nil {
			t.Fatalf("import %s: %v", f, err)
		}
		for _, w := range r.Warnings {
			t.Logf("  %s: skipped: %s — %s", scenario, w, malformedNote)
		}
		ours := ingesttest.ArcOf(t, l, r.Session)
		peerArc, peerFinal := ingesttest.PeerGolden(t, f+".replay.json.golden")
		st := ingesttest.StateOf(t, l, r.Session)
		final, arc := "agree", "agree"
		if st.Phase != peerFinal {
			final = "DIFFER"
		}
		if strings.Join(ours, ">") != strings.Join(peerArc, ">") {
			arc = "DIFFER"
		}
		t.Logf("%-34s %-8s %-8s %-7s %-7s %s | %s", scenario, st.Phase, peerFinal, final, arc, strings.Join(ours, ">"), strings.Join(peerArc, ">"))
		why, known := explained[scenario]
		if !known {
			t.Errorf("%s: not in the table of scenarios", scenario)
		}
		if (final != "agree" || arc != "agree") && why == "" {
			t.Errorf("%s: differs from the peer without an explanation", scenario)
		} else if why != "" {
			t.Logf("  %s: %s", scenario, why)
		}
		if st.Agent != Agent || st.Version == "" && scenario != "01-example-session" {
			t.Errorf("%s: agent %q version %q", scenario, st.Agent, st.Version)
		}
	}
	before, _ := l.LastSeq(t.Context())
	for _, f := range rollouts {
		r, err := in.ImportFile(t.Context(), f, nil)
		if err != nil || r.Appended != 0 {
			t.Errorf("re-import %s: %+v, %v", f, r, err)
		}
	}
	if after, _ := l.LastSeq(t.Context()); after != before {
		t.Errorf("re-import moved the log from %d to %d", before, after)
	}
}
