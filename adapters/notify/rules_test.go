package notify_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/notify"
	"github.com/logbook-dev/logbook/events"
)

func fmtLine(format string, args ...any) string { return fmt.Sprintf(format, args...) }

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// rec returns a stored record of p on agg at seq.
func rec(agg events.Aggregate, seq uint64, p events.Payload, cause *events.Cause) events.Record {
	return events.Record{Seq: seq, Envelope: events.Envelope{ID: ulid.MustNew(uint64(seq), nil), Type: p.EventType(), V: 1,
		Agg: agg, Ver: seq, At: t0.Add(time.Duration(seq) * time.Second), Cause: cause, Data: p}}
}

var s1 = events.Aggregate{Kind: events.KindSession, ID: "5e551011-0000-4000-8000-000000000074"}

func TestMatch(t *testing.T) {
	t.Parallel()
	cmd := events.Aggregate{Kind: events.KindCommand, ID: "01JDQ7Z8V6T8Q2W3E4R5T6Y7C1"}
	tick := &events.Cause{Kind: "system", Event: "tick", Ref: "01JDQ7Z8V6T8Q2W3E4R5T6Y7T1"}
	waiting := notify.Rule{Name: "w", On: notify.OnWaiting, After: time.Minute}
	for _, tc := range []struct {
		name  string
		rule  notify.Rule
		rec   events.Record
		c     notify.Context
		fire  bool
		title string
		body  string
		id    string // "": the event's
		delay bool
	}{
		{"waiting", waiting, rec(s1, 5, events.SessionTransitioned{From: "working", To: "waiting", Activity: "question"}, nil), notify.Context{}, true,
			"session 5e551011 waits for you: a question", "waiting on a question for 1m0s", "", true},
		{"waiting named", waiting, rec(s1, 5, events.SessionTransitioned{From: "working", To: "waiting", Activity: "review"}, nil),
			notify.Context{Name: "Fix the\nparser\x1b[31m", Waits: "permission for Bash: git push\n--force"}, true,
			"session 5e551011 (Fix the parser [31m) waits for you: permission for Bash: git push --force",
			"waiting on permission for Bash: git push --force for 1m0s", "", true},
		{"waiting named by its directory, cut", waiting, rec(s1, 5, events.SessionTransitioned{From: "working", To: "waiting", Activity: "plan"}, nil),
			notify.Context{Name: "/home/ana/src/" + strings.Repeat("é", 40), Waits: "permission for Bash: ls"}, true,
			"session 5e551011 (/home/ana/src/" + strings.Repeat("é", 23) + "…) waits for you: a plan to approve", "waiting on a plan to approve for 1m0s", "", true},
		{"working is no wait", waiting, rec(s1, 5, events.SessionTransitioned{From: "waiting", To: "working"}, nil), notify.Context{}, false, "", "", "", false},
		{"review at once", notify.Rule{Name: "r", On: notify.OnReviewPending}, rec(s1, 6, events.ReviewRequested{ReviewID: "toolu_1", Tool: "Bash", Action: "git push"}, nil), notify.Context{}, true,
			"session 5e551011: review pending: permission for Bash: git push", "permission for Bash: git push", "", true},
		{"review a notice opened", notify.Rule{Name: "r", On: notify.OnReviewPending}, rec(s1, 6, events.ReviewRequested{ReviewID: "n1", Tool: "Bash", Action: "Claude needs your permission to use Bash", Notice: true}, nil), notify.Context{}, true,
			"session 5e551011: review pending: permission for Bash", "permission for Bash", "", true},
		{"review named", notify.Rule{Name: "r", On: notify.OnReviewPending}, rec(s1, 6, events.ReviewRequested{ReviewID: "toolu_1", Tool: "Bash", Action: "git push"}, nil), notify.Context{Name: "Release"}, true,
			"session 5e551011 (Release): review pending: permission for Bash: git push", "permission for Bash: git push", "", true},
		{"breaker", notify.Rule{Name: "b", On: notify.OnBreakerTripped}, rec(s1, 7, events.ReviewBreakerTripped{Refusals: 3, Window: 3}, nil), notify.Context{}, true,
			"session 5e551011: refusal breaker tripped", "3 refusals in the last 3 verdicts; automatic approval stopped", "", false},
		{"agent gone", notify.Rule{Name: "a", On: notify.OnAbandoned}, rec(s1, 8, events.SessionEnded{From: "working", Reason: "agent_gone", Evidence: "pid 7 gone"}, tick), notify.Context{}, true,
			"session 5e551011: agent gone", "pid 7 gone", tick.Ref, false},
		{"stale mark", notify.Rule{Name: "a", On: notify.OnAbandoned}, rec(s1, 9, events.SessionEntryAbandoned{EntryID: "e1", Reason: "stale", Evidence: "nothing for 30m"}, tick), notify.Context{}, true,
			"session 5e551011: stale", "nothing for 30m", tick.Ref, false},
		{"interrupted is no abandonment", notify.Rule{Name: "a", On: notify.OnAbandoned}, rec(s1, 9, events.SessionEntryAbandoned{EntryID: "e1", Reason: "interrupted"}, tick), notify.Context{}, false, "", "", "", false},
		{"ended by the agent", notify.Rule{Name: "a", On: notify.OnAbandoned}, rec(s1, 9, events.SessionEnded{Reason: "prompt_input_exit"}, tick), notify.Context{}, false, "", "", "", false},
		{"command failed", notify.Rule{Name: "c", On: notify.OnCommandFailed}, rec(cmd, 10, events.CommandExited{Code: 2}, nil), notify.Context{Session: s1.ID, Argv: []string{"make", "test"}}, true,
			"session 5e551011: command failed (exit 2)", "make test", "", false},
		{"command failed, session named", notify.Rule{Name: "c", On: notify.OnCommandFailed}, rec(cmd, 10, events.CommandExited{Code: 2}, nil), notify.Context{Session: s1.ID, Argv: []string{"make", "test"}, Name: "/srv/app"}, true,
			"session 5e551011 (/srv/app): command failed (exit 2)", "make test", "", false},
		{"command killed", notify.Rule{Name: "c", On: notify.OnCommandFailed}, rec(cmd, 10, events.CommandExited{Code: -1, Signal: "SIGKILL"}, nil), notify.Context{}, true,
			"command failed: killed by SIGKILL", "", "", false},
		{"command stopped", notify.Rule{Name: "c", On: notify.OnCommandFailed}, rec(cmd, 10, events.CommandExited{Code: -1, Signal: "SIGTERM", Stopped: true}, nil), notify.Context{}, false, "", "", "", false},
		{"spend reached", notify.Rule{Name: "s", On: notify.OnSpend, USD: 5}, rec(s1, 11, events.SessionTurnEnded{Turn: 3, Outcome: "completed"}, nil), notify.Context{Cost: ptr(5.5)}, true,
			"session 5e551011 spent over $5.00", "$5.50 so far", s1.ID, false},
		{"spend of a hundredth of a cent", notify.Rule{Name: "s", On: notify.OnSpend, USD: 0.0001}, rec(s1, 11, events.SessionTurnEnded{Turn: 3, Outcome: "completed"}, nil), notify.Context{Cost: ptr(0.00042), Name: "Tiny"}, true,
			"session 5e551011 (Tiny) spent over $0.0001", "$0.0004 so far", s1.ID, false},
		{"spend below", notify.Rule{Name: "s", On: notify.OnSpend, USD: 5}, rec(s1, 11, events.SessionTurnEnded{Turn: 3, Outcome: "completed"}, nil), notify.Context{Cost: ptr(4.99)}, false, "", "", "", false},
		{"spend unpriced", notify.Rule{Name: "s", On: notify.OnSpend, USD: 5}, rec(s1, 11, events.SessionTurnEnded{Turn: 3, Outcome: "completed"}, nil), notify.Context{}, false, "", "", "", false},
		{"spend only at a turn's end", notify.Rule{Name: "s", On: notify.OnSpend, USD: 5}, rec(s1, 11, events.SessionTransitioned{From: "working", To: "ready"}, nil), notify.Context{Cost: ptr(9.0)}, false, "", "", "", false},
		{"command passed", notify.Rule{Name: "c", On: notify.OnCommandFailed}, rec(cmd, 10, events.CommandExited{Code: 0}, nil), notify.Context{}, false, "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := notify.Match(tc.rule, tc.rec, tc.c)
			if ok != tc.fire {
				t.Fatalf("fires %v, want %v", ok, tc.fire)
			}
			if !ok {
				return
			}
			id := tc.id
			if id == "" {
				id = tc.rec.ID.String()
			}
			if got.Title != tc.title || got.Body != tc.body || got.ID != id || got.Delayed != tc.delay || !got.Due.Equal(tc.rec.At.Add(tc.rule.After)) {
				t.Errorf("got %+v\nwant title %q body %q id %s delayed %v", got, tc.title, tc.body, id, tc.delay)
			}
		})
	}
}

func TestHolds(t *testing.T) {
	t.Parallel()
	wait := rec(s1, 5, events.SessionTransitioned{From: "working", To: "waiting", Activity: "review"}, nil)
	review := rec(s1, 5, events.ReviewRequested{ReviewID: "toolu_1", Tool: "Bash"}, nil)
	wt, _ := notify.Match(notify.Rule{Name: "w", On: notify.OnWaiting, After: time.Minute}, wait, notify.Context{})
	rt, _ := notify.Match(notify.Rule{Name: "r", On: notify.OnReviewPending, After: time.Minute}, review, notify.Context{})
	obs := rec(s1, 6, events.SessionActivityChanged{From: "review", To: "review"}, nil)
	moved := rec(s1, 7, events.SessionTransitioned{From: "waiting", To: "working"}, nil)
	otherDecided := rec(s1, 7, events.ReviewDecided{ReviewID: "toolu_0", Verdict: "allow", Outcome: "approved"}, nil)
	decided := rec(s1, 8, events.ReviewDecided{ReviewID: "toolu_1", Verdict: "allow", Outcome: "approved"}, nil)
	ended := rec(s1, 9, events.SessionEnded{From: "waiting", Reason: "cli"}, nil)
	for _, tc := range []struct {
		name  string
		t     notify.Trigger
		rec   events.Record
		later []events.Record
		want  bool
	}{
		{"still waiting", wt, wait, []events.Record{obs}, true},
		{"moved on", wt, wait, []events.Record{obs, moved}, false},
		{"ended", wt, wait, []events.Record{ended}, false},
		{"review still open", rt, review, []events.Record{obs, moved, otherDecided}, true},
		{"review decided", rt, review, []events.Record{decided}, false},
		{"review's session ended", rt, review, []events.Record{ended}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := notify.Holds(tc.t, tc.rec, tc.later); got != tc.want {
				t.Errorf("Holds = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	a := notify.Key("w", "desk", "01JDQ7Z8V6T8Q2W3E4R5T6Y7Z7")
	if len(a) != 32 || events.ValidID(a) != nil {
		t.Errorf("key %q: want 32 hex bytes that are an aggregate id", a)
	}
	for _, b := range []string{notify.Key("w", "team", "01JDQ7Z8V6T8Q2W3E4R5T6Y7Z7"), notify.Key("x", "desk", "01JDQ7Z8V6T8Q2W3E4R5T6Y7Z7"), notify.Key("w", "desk", "01JDQ7Z8V6T8Q2W3E4R5T6Y7Z8")} {
		if b == a {
			t.Errorf("rule, sink and event must each change the key: %s twice", a)
		}
	}
	if notify.Key("w", "desk", "01JDQ7Z8V6T8Q2W3E4R5T6Y7Z7") != a {
		t.Error("Key is not deterministic")
	}
}

// TestDollars: a configured amount prints as written, with cents at
// least.
func TestDollars(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{5: "5.00", 0.0001: "0.0001", 12.5: "12.50", 0.25: "0.25", 1234.567: "1234.567"} {
		if got := notify.Dollars(in); got != want {
			t.Errorf("Dollars(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestBackoff: a sink that failed is tried again 5 s after its first
// failure, doubling to 5 min.
func TestBackoff(t *testing.T) {
	t.Parallel()
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i, w := range want {
		if got := notify.Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := notify.Backoff(1000); got != 5*time.Minute {
		t.Errorf("Backoff(1000) = %s, want 5m0s", got)
	}
}

func ptr(f float64) *float64 { return &f }
