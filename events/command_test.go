package events_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
)

// TestCommand_Cause pins which command events are lifecycle moves that need
// a complete cause, and that each decodes on a command subject.
func TestCommand_Cause(t *testing.T) {
	tests := []struct {
		p         events.Payload
		needCause bool
	}{
		{events.CommandRequested{Session: "s1", Argv: []string{"ls"}, Workspace: "/w", Mode: events.ModeReadOnly, RequestedBy: "cli"}, false},
		{events.CommandStarted{Worker: "w1", Host: "h", Pid: 1}, true},
		{events.CommandBackgrounded{AfterMS: 1}, false},
		{events.CommandStdinWritten{Bytes: 1}, false},
		{events.CommandStopRequested{By: "alice"}, true},
		{events.CommandExited{Code: 0}, true},
		{events.CommandAbandoned{Reason: "worker_lost", Worker: "w1"}, true},
		{events.CommandEvicted{By: "c2"}, true},
		{events.CommandRefused{Reason: "no bubblewrap"}, true},
	}
	reg := events.NewRegistry()
	for _, tt := range tests {
		t.Run(tt.p.EventType(), func(t *testing.T) {
			e := reg.New(tt.p)
			e.ID, e.Agg, e.Ver, e.At = id0, events.Aggregate{Kind: events.KindCommand, ID: "01JDQ7Z8V6T8Q2W3E4R5T6Y7C1"}, 1, at0
			if got := reg.Version(e.Type); got != 1 {
				t.Errorf("version %d, want 1", got)
			}
			err := reg.Validate(e)
			if got := errors.Is(err, events.ErrMissingCause); got != tt.needCause {
				t.Errorf("without a cause: err = %v; want ErrMissingCause: %v", err, tt.needCause)
			} else if !tt.needCause && err != nil {
				t.Errorf("without a cause: %v", err)
			}
			e.Cause = &events.Cause{Kind: "worker", Event: "report", Ref: "r1"}
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			back, err := reg.Decode(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if diff := cmp.Diff(e, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}
