package gate

import (
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestAsks: the requests exec --elevate and command stdin send, as a
// policy and a reviewer read them.
func TestAsks(t *testing.T) {
	el, err := ElevateRequest("s1", "c1", []string{"make", "deploy"}, "/w", "/w/sub", "ship it", "ref1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(el.Input), `{"argv":["make","deploy"],"command":"make deploy","cwd":"/w/sub","workspace":"/w"}`; got != want {
		t.Errorf("elevate input %s, want %s", got, want)
	}
	if el.Event != EventExec || el.Tool != "exec" || el.ID != "elevate-c1" || el.Cwd != "/w" || el.Grant != events.ModeFullAccess || el.Reason != "ship it" || el.Session != "s1" || el.Ref != "ref1" {
		t.Errorf("elevate request %+v", el)
	}
	for _, c := range []struct {
		secret bool
		want   string
	}{
		{false, `{"bytes":3,"command":"c1","text":"yes"}`},
		{true, `{"bytes":3,"command":"c1"}`},
	} {
		in, err := StdinRequest("s1", "c1", []byte("yes"), c.secret, "ref2")
		if err != nil {
			t.Fatal(err)
		}
		if string(in.Input) != c.want || in.Event != EventStdin || in.Tool != "stdin" || in.ID != "" || in.Ref != "ref2" || in.Session != "s1" {
			t.Errorf("stdin request (secret %v) %+v, input %s; want input %s", c.secret, in, in.Input, c.want)
		}
	}
}
