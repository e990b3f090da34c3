package usage

import (
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/reducers/session"
)

// TestReport_Copied: a fork's copies of its origin's calls are in no
// line and no total (they are the origin's), and the report names them
// apart, by session, origin and model, for the sessions it shows.
func TestReport_Copied(t *testing.T) {
	at := time.Date(2026, 4, 24, 19, 19, 0, 0, time.UTC)
	bucket := func(in, out int64) []session.UsageBucket {
		return []session.UsageBucket{{Model: "claude-opus-4-7", Minute: at, Input: in, Output: out, Calls: 1}}
	}
	ss := []session.State{
		{ID: "origin", Usage: bucket(100, 10)},
		{ID: "fork", Usage: bucket(200, 20), Copied: []session.CopiedSpend{{From: "origin", Model: "claude-opus-4-7", Input: 100, Output: 10, Calls: 1}}},
	}
	rep, err := NewReport(ss, Query{By: ByModel}, Shipped(), at.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Lines) != 1 || rep.Lines[0].Tokens.Input != 300 || rep.Lines[0].Tokens.Output != 30 {
		t.Errorf("total over both sessions: %+v; want input 300, output 30", rep.Lines)
	}
	want := CopiedLine{Session: "fork", CopiedSpend: ss[1].Copied[0]}
	if len(rep.Copied) != 1 || rep.Copied[0] != want {
		t.Errorf("copied: %+v; want %+v", rep.Copied, want)
	}
	var b strings.Builder
	if err := rep.WriteText(&b, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "fork: from origin, claude-opus-4-7: 110 tokens (input 100, output 10, cache write 0, cache read 0) in 1 calls") {
		t.Errorf("the text does not name the copy:\n%s", b.String())
	}
	if rep, _ := NewReport(ss, Query{Session: "origin"}, Shipped(), at); len(rep.Copied) != 0 {
		t.Errorf("the origin alone: copied %+v", rep.Copied)
	}
}
