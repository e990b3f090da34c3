package projections_test

import (
	"context"
	"fmt"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/projections/projectionstest"
)

// A store folds records into session rows; the checkpoint moves with them.
func ExampleStore_Apply() {
	h := projectionstest.NewHistory(projectionstest.Epoch())
	prompt := events.Observation{Key: "line-1", Parser: "claude-transcript/1", Line: 1, Kind: "user",
		Meta: events.Meta{SessionID: "agent-s1", Cwd: "/w/app"}, Signals: []events.Sig{{Kind: events.SigPrompt, ID: "p1"}}}
	if _, err := h.Observe("s1", events.ClaudeLineObserved{Observation: prompt}, ""); err != nil {
		panic(err)
	}

	s, err := projections.OpenMem(projections.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	n, err := s.Apply(context.Background(), projectionstest.Seq(h.Records), 0)
	if err != nil {
		panic(err)
	}
	st, err := s.Session("s1")
	if err != nil {
		panic(err)
	}
	working, _ := s.Sessions(events.PhaseWorking)
	fmt.Println(n, "records, checkpoint", s.Checkpoint())
	fmt.Println(st.ID, st.Phase, st.Activity, "turn", st.Turns, "cwd", st.Cwd)
	fmt.Println(len(working), "working")
	// Output:
	// 4 records, checkpoint 4
	// s1 working thinking turn 1 cwd /w/app
	// 1 working
}
