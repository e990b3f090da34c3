package review_test

import (
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/review"
)

func TestDerive(t *testing.T) {
	reviewer := events.DecidedBy{Kind: events.DecidedByReviewer, Name: "./judge"}
	offered := []string{"u1", "u2"}
	tests := []struct {
		name    string
		a       review.Answer
		verdict string
		outcome string
		auth    string
		why     string
	}{
		{"low allow stands", review.Answer{Verdict: "allow", Risk: "low", By: reviewer}, "allow", "approved", "none", ""},
		{"critical allow by a reviewer is denied", review.Answer{Verdict: "allow", Risk: "critical", UserAuthorization: "high", Evidence: []string{"u1"}, Offered: offered, By: reviewer}, "deny", "rejected", "high", "critical"},
		{"critical allow by a rule is denied", review.Answer{Verdict: "allow", Risk: "critical", By: events.DecidedBy{Kind: events.DecidedByRule, Name: "Bash(*)"}}, "deny", "rejected", "none", "critical"},
		{"high allow without authorization is denied", review.Answer{Verdict: "allow", Risk: "high", UserAuthorization: "low", Evidence: []string{"u1"}, Offered: offered, By: reviewer}, "deny", "rejected", "low", "high risk"},
		{"high allow with medium authorization stands", review.Answer{Verdict: "allow", Risk: "high", UserAuthorization: "medium", Evidence: []string{"u2"}, Offered: offered, By: reviewer}, "allow", "approved", "medium", ""},
		{"authorization citing no offered user message counts as none", review.Answer{Verdict: "allow", Risk: "high", UserAuthorization: "high", Evidence: []string{"tool-output-7"}, Offered: offered, By: reviewer}, "deny", "rejected", "none", `high risk needs medium or high user authorization, found none: ask the user; the evidence cited "tool-output-7", which is no user message offered to the review, so it counts for nothing`},
		{"many ids cited that were not offered are named, at most three", review.Answer{Verdict: "allow", Risk: "high", UserAuthorization: "high", Evidence: []string{"x1", "x2", "x3", "x4", "x5"}, Offered: offered, By: reviewer}, "deny", "rejected", "none", `cited "x1", "x2", "x3" and 2 more, which are no user messages offered to the review, so they count for nothing`},
		{"dropped evidence above low is denied", review.Answer{Verdict: "allow", Risk: "medium", EvidenceDropped: true, By: reviewer}, "deny", "rejected", "none", "dropped"},
		{"dropped evidence at low stands", review.Answer{Verdict: "allow", Risk: "low", EvidenceDropped: true, By: reviewer}, "allow", "approved", "none", ""},
		{"unknown risk counts as critical", review.Answer{Verdict: "allow", Risk: "tiny", By: reviewer}, "deny", "rejected", "none", "critical"},
		{"a verdict outside the enum is a deny", review.Answer{Verdict: "maybe", Risk: "low", By: reviewer}, "deny", "rejected", "none", ""},
		{"timed out", review.Answer{Outcome: "timed_out", By: events.DecidedBy{Kind: events.DecidedByTimeout}}, "deny", "timed_out", "", ""},
		{"unavailable", review.Answer{Outcome: "unavailable", Verdict: "allow", By: reviewer}, "deny", "unavailable", "", ""},
		{"a person may allow critical", review.Answer{Verdict: "allow", Risk: "critical", By: events.DecidedBy{Kind: events.DecidedByUser, Name: "person:a@h"}}, "allow", "approved", "high", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := review.Derive("r1", tt.a)
			if d.Verdict != tt.verdict || d.Outcome != tt.outcome || d.UserAuthorization != tt.auth {
				t.Errorf("got %s/%s auth %q, want %s/%s auth %q (reason %q)", d.Verdict, d.Outcome, d.UserAuthorization, tt.verdict, tt.outcome, tt.auth, d.Reason)
			}
			if !strings.Contains(d.Reason, tt.why) {
				t.Errorf("reason %q does not say %q", d.Reason, tt.why)
			}
			if d.DecidedBy == nil || d.DecidedBy.Kind != tt.a.By.Kind {
				t.Errorf("decided_by %+v", d.DecidedBy)
			}
			for _, e := range d.Evidence {
				if e != "u1" && e != "u2" && tt.a.By.Kind != events.DecidedByUser {
					t.Errorf("evidence %q was not offered as a user message", e)
				}
			}
		})
	}
}

func TestTrips(t *testing.T) {
	deny := func(n int) []bool {
		v := make([]bool, n)
		for i := range v {
			v[i] = true
		}
		return v
	}
	if !review.Trips(deny(3), 3) {
		t.Error("3 in a row did not trip")
	}
	if review.Trips(deny(2), 2) {
		t.Error("2 in a row tripped")
	}
	// 10 denials spread over 50 decisions, never 3 in a row.
	var w []bool
	for i := 0; i < 50; i++ {
		w = append(w, i%5 == 0 || i%5 == 1)
	}
	if w10 := w[len(w)-30:]; !review.Trips(w10, 1) == (count(w10) >= 10) {
		t.Errorf("window of %d denials: trips %v", count(w10), review.Trips(w10, 1))
	}
	if !review.Trips(w, 0) {
		t.Errorf("%d denials in the window did not trip", count(w))
	}
}

func count(v []bool) int {
	n := 0
	for _, d := range v {
		if d {
			n++
		}
	}
	return n
}

func TestTold(t *testing.T) {
	for _, o := range []string{events.ReviewRejected, events.ReviewTimedOut, events.ReviewUnavailable} {
		if review.Told(o) == "" {
			t.Errorf("%s: nothing told", o)
		}
	}
}
