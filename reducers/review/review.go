// Package review holds the gate's rules that no answer can bend: how a
// verdict is re-derived from what a rule, a reviewer program or a person
// answered, and when the refusal breaker trips. It is pure: the session
// reducer (reducers/session) calls it inside its decisions, so replay and
// rederive reach the same verdicts every time.
package review

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/events"
)

// Risk classes, lowest first.
const (
	RiskLow      = "low"
	RiskMedium   = "medium"
	RiskHigh     = "high"
	RiskCritical = "critical"
)

// User-authorization levels, lowest first: how clearly the user's own
// messages ask for the action.
const (
	AuthNone   = "none"
	AuthLow    = "low"
	AuthMedium = "medium"
	AuthHigh   = "high"
)

// RiskRank returns the rank of risk class r (low 0 … critical 3) and
// false for anything else.
func RiskRank(r string) (int, bool) {
	switch r {
	case RiskLow:
		return 0, true
	case RiskMedium:
		return 1, true
	case RiskHigh:
		return 2, true
	case RiskCritical:
		return 3, true
	}
	return 0, false
}

// AuthRank returns the rank of authorization level a (none 0 … high 3)
// and false for anything else.
func AuthRank(a string) (int, bool) {
	switch a {
	case AuthNone:
		return 0, true
	case AuthLow:
		return 1, true
	case AuthMedium:
		return 2, true
	case AuthHigh:
		return 3, true
	}
	return 0, false
}

// MaxRisk returns the higher of two risk classes; an unknown class counts
// as critical, and "" as nothing.
func MaxRisk(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	ra, oka := RiskRank(a)
	rb, okb := RiskRank(b)
	if !oka || !okb {
		return RiskCritical
	}
	if rb > ra {
		return b
	}
	return a
}

// Answer is what a decider said about a review, before Logbook re-derives
// the verdict from it.
type Answer struct {
	// Verdict is events.VerdictAllow or events.VerdictDeny; anything
	// else is a deny.
	Verdict string
	// Outcome, when set to events.ReviewTimedOut or ReviewUnavailable,
	// says no judgement was made: the verdict is deny with that outcome.
	Outcome           string
	Risk              string // risk class; "" or unknown counts as critical
	UserAuthorization string // authorization level; unknown counts as none
	// Evidence holds the ids the decider cites as the user's
	// authorization; only those in Offered count.
	Evidence []string
	// Offered holds the event ids of the real user messages (prompts,
	// answers to questions) the decider was given.
	Offered         []string
	EvidenceDropped bool // user messages had to be left out to fit the decider's budget
	By              events.DecidedBy
	Reason          string
}

// Derive returns the decision an answer on review id amounts to. A
// person's answer (By.Kind user) stands as given. Any other answer is
// re-derived, whatever it said: critical risk is never allowed; high risk
// only with medium or high user authorization; with user evidence
// dropped, anything above low risk is denied; authorization counts only
// when it cites a user message that was offered. A denial made here says
// why in Reason.
func Derive(id string, a Answer) events.ReviewDecided {
	by := a.By
	d := events.ReviewDecided{ReviewID: id, DecidedBy: &by, EvidenceDropped: a.EvidenceDropped}
	switch a.Outcome {
	case events.ReviewTimedOut, events.ReviewUnavailable:
		d.Verdict, d.Outcome, d.Reason = events.VerdictDeny, a.Outcome, a.Reason
		d.Risk = a.Risk
		return d
	}
	if by.Kind == events.DecidedByUser {
		d.Risk, d.UserAuthorization, d.Reason = a.Risk, AuthHigh, a.Reason
		d.Evidence = a.Evidence
		if a.Verdict == events.VerdictAllow {
			d.Verdict, d.Outcome = events.VerdictAllow, events.ReviewApproved
		} else {
			d.Verdict, d.Outcome = events.VerdictDeny, events.ReviewRejected
		}
		return d
	}
	risk := a.Risk
	if _, ok := RiskRank(risk); !ok {
		risk = RiskCritical
	}
	d.Risk = risk
	offered := make(map[string]bool, len(a.Offered))
	for _, o := range a.Offered {
		offered[o] = true
	}
	var unoffered []string // cited, but no user message offered has the id
	for _, e := range a.Evidence {
		if offered[e] {
			d.Evidence = append(d.Evidence, e)
		} else {
			unoffered = append(unoffered, e)
		}
	}
	auth := a.UserAuthorization
	if _, ok := AuthRank(auth); !ok || len(d.Evidence) == 0 {
		auth = AuthNone
	}
	d.UserAuthorization = auth
	if a.Verdict != events.VerdictAllow {
		d.Verdict, d.Outcome, d.Reason = events.VerdictDeny, events.ReviewRejected, a.Reason
		return d
	}
	rr, _ := RiskRank(risk)
	ar, _ := AuthRank(auth)
	why := ""
	switch {
	case rr >= 3:
		why = "critical risk is never allowed automatically: only a person may allow it"
	case rr == 2 && ar < 2:
		why = fmt.Sprintf("high risk needs medium or high user authorization, found %s: ask the user", auth)
		if len(unoffered) > 0 {
			what := "which is no user message offered to the review, so it counts"
			if len(unoffered) > 1 {
				what = "which are no user messages offered to the review, so they count"
			}
			why += fmt.Sprintf("; the evidence cited %s, %s for nothing", citedIDs(unoffered), what)
		}
	case a.EvidenceDropped && rr > 0:
		why = fmt.Sprintf("user messages were dropped to fit the review and the risk is %s: ask the user", risk)
	}
	if why != "" {
		d.Verdict, d.Outcome = events.VerdictDeny, events.ReviewRejected
		d.Reason = "re-derived deny: " + why
		if a.Reason != "" {
			d.Reason += " (answer was allow: " + a.Reason + ")"
		}
		return d
	}
	d.Verdict, d.Outcome, d.Reason = events.VerdictAllow, events.ReviewApproved, a.Reason
	return d
}

// citedIDs names ids, quoted, at most 3 of them and how many more.
func citedIDs(ids []string) string {
	const most = 3
	q := make([]string, 0, most)
	for _, id := range ids[:min(len(ids), most)] {
		q = append(q, strconv.Quote(clipID(id)))
	}
	out := strings.Join(q, ", ")
	if len(ids) > most {
		out += fmt.Sprintf(" and %d more", len(ids)-most)
	}
	return out
}

// clipID cuts a cited id (the reviewer's text) to 64 bytes.
func clipID(id string) string {
	if len(id) <= 64 {
		return id
	}
	n := 64
	for n > 0 && !utf8.RuneStart(id[n]) {
		n--
	}
	return id[:n] + "…"
}

// The refusal breaker: BreakerRun denials in a row, or BreakerInWindow
// denials among the last BreakerWindow decisions of a session, trip it.
const (
	BreakerRun      = 3
	BreakerInWindow = 10
	BreakerWindow   = 50
)

// Trips reports whether the breaker trips with window (the session's
// last decisions since the last reset, true = deny, at most
// BreakerWindow) and run (denials in a row since the last allow, the
// user's last new prompt or reset).
func Trips(window []bool, run int) bool {
	if run >= BreakerRun {
		return true
	}
	n := 0
	for _, deny := range window {
		if deny {
			n++
		}
	}
	return n >= BreakerInWindow
}

// Told returns what an agent is told a denial with outcome means: a
// rejection is a judgement, a timeout is unproven, unavailable is no
// judgement at all.
func Told(outcome string) string {
	switch outcome {
	case events.ReviewRejected:
		return "rejected: a judgement; do not pursue the same outcome another way"
	case events.ReviewTimedOut:
		return "timed out: unproven, not unsafe; you may try once more or ask the user"
	case events.ReviewUnavailable:
		return "unavailable: no reviewer could run, so no judgement was made; ask the user, do not work around it"
	}
	return ""
}
