package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/review"
)

// DefaultBudget is how long the gate waits for a verdict (a reviewer
// program's or a person's) before the review is decided timed_out.
const DefaultBudget = 90 * time.Second

// ReviewerRequest is what a reviewer program reads on stdin: one JSON
// object (protocol version 1).
type ReviewerRequest struct {
	Version       int             `json:"version"` // 1
	ReviewID      string          `json:"review_id"`
	Session       string          `json:"session"`
	Event         string          `json:"event"` // PreToolUse, PermissionRequest, exec, stdin
	Tool          string          `json:"tool"`
	Action        string          `json:"action"`          // the exact boundary reviewed
	Input         json.RawMessage `json:"input,omitempty"` // the tool's input as the agent sent it
	Cwd           string          `json:"cwd,omitempty"`
	Mode          string          `json:"mode,omitempty"` // omitted when the session's mode is not known
	Revision      int             `json:"revision"`
	Risk          string          `json:"risk,omitempty"`  // the policy's risk class for the action
	Grant         string          `json:"grant,omitempty"` // "full_access" for an elevation
	Justification string          `json:"justification,omitempty"`
	// UserMessages are the session's real user messages (prompts and
	// answers), oldest first: the only authorization evidence there is;
	// [] (never null) when there are none.
	UserMessages []UserMessage `json:"user_messages"`
	// EvidenceDropped says older user messages were left out to fit
	// MaxEvidenceBytes.
	EvidenceDropped bool  `json:"evidence_dropped"`
	BudgetMS        int64 `json:"budget_ms"`
}

// UserMessage is one real user message: the id of the observation that
// holds it (cite it in ReviewerAnswer.Evidence), when, what it is
// (MessagePrompt or MessageAnswer), and its text (redacted, at most 200
// bytes as the log keeps it).
type UserMessage struct {
	ID   string    `json:"id"`
	At   time.Time `json:"at"`
	Kind string    `json:"kind"`
	Text string    `json:"text"`
}

// Kinds of user message (UserMessage.Kind).
const (
	MessagePrompt = "prompt" // a prompt the user submitted
	MessageAnswer = "answer" // the user's answer to a question the agent asked
)

// ReviewerAnswer is what a reviewer program writes on stdout: one JSON
// object. Verdict is allow or deny; Risk low, medium, high or critical;
// UserAuthorization none, low, medium or high; Evidence the ids of the
// user messages relied on. Anything else is garbage.
type ReviewerAnswer struct {
	Verdict           string   `json:"verdict"`
	Risk              string   `json:"risk"`
	UserAuthorization string   `json:"user_authorization"`
	Evidence          []string `json:"evidence"`
	Reason            string   `json:"reason"`
}

// MaxEvidenceBytes bounds the text of the user messages given to a
// reviewer; older messages past it are dropped (EvidenceDropped).
const MaxEvidenceBytes = 32 << 10

// MaxAnswerBytes bounds what is read of a reviewer program's stdout (1
// MiB): the answer is one small JSON object. A program that writes more
// is killed and its review is unavailable; nothing past the bound is kept.
const MaxAnswerBytes = 1 << 20

// maxReasonBytes bounds what is kept of a reviewer program's stderr, for
// the reason of an unavailable review; the rest is read and dropped.
const maxReasonBytes = 4 << 10

// Reviewer runs a reviewer program: Command through "/bin/sh -c", the
// request on stdin, the answer on stdout (at most MaxAnswerBytes read),
// stderr kept for the reason (its first 4 KiB). When the review ends
// (an answer read and the program exited, the budget passed, ctx ended,
// too much written) what is left of the program's tree is killed with
// SIGKILL: its process group and session and its descendants
// (sandbox.KillTree), and any process still holding one of its stdin,
// stdout or stderr pipes, setsid or not. A descendant that left the
// session and closed those pipes is out of reach.
type Reviewer struct {
	Command string
}

// Review runs the program on req within budget and returns its answer
// for review.Derive: a timeout is outcome timed_out; a program that
// cannot start, exits non-zero, writes more than MaxAnswerBytes, or
// prints anything but one answer with enums in range is outcome
// unavailable. The answer counts once the program has exited, even if a
// process it left behind still holds its stdout.
func (r *Reviewer) Review(ctx context.Context, req ReviewerRequest, budget time.Duration) review.Answer {
	by := events.DecidedBy{Kind: events.DecidedByReviewer, Name: r.Command}
	if req.UserMessages == nil {
		req.UserMessages = []UserMessage{}
	}
	offered := make([]string, len(req.UserMessages))
	for i, m := range req.UserMessages {
		offered[i] = m.ID
	}
	fail := func(outcome, why string) review.Answer {
		return review.Answer{Outcome: outcome, By: by, Reason: why, Risk: req.Risk, Offered: offered, EvidenceDropped: req.EvidenceDropped}
	}
	in, err := json.Marshal(req)
	if err != nil {
		return fail(events.ReviewUnavailable, "encode the request: "+err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	p, err := startReviewer(r.Command, in)
	if err != nil {
		return fail(events.ReviewUnavailable, "reviewer could not start: "+err.Error())
	}
	defer p.end()
	select {
	case err = <-p.exited:
	case <-p.overflow:
		p.kill()
		<-p.exited
		return fail(events.ReviewUnavailable, fmt.Sprintf("reviewer %s: answer is more than %d bytes (%d MiB), the bound on a reviewer's stdout; program killed", r.Command, MaxAnswerBytes, MaxAnswerBytes>>20))
	case <-ctx.Done():
		p.kill()
		<-p.exited
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail(events.ReviewTimedOut, fmt.Sprintf("reviewer gave no answer within %s", budget))
		}
		return fail(events.ReviewUnavailable, "review cancelled: "+ctx.Err().Error())
	}
	// The program has exited: what it wrote is in its pipes. Whatever it
	// left behind holding them is killed, so they reach their end.
	p.kill()
	out, over := p.drain()
	if over {
		return fail(events.ReviewUnavailable, fmt.Sprintf("reviewer %s: answer is more than %d bytes (%d MiB), the bound on a reviewer's stdout; program killed", r.Command, MaxAnswerBytes, MaxAnswerBytes>>20))
	}
	if err != nil {
		why := "reviewer failed: " + err.Error()
		if s := strings.TrimSpace(p.errb.kept()); s != "" {
			why += ": " + s
		}
		return fail(events.ReviewUnavailable, why)
	}
	var a ReviewerAnswer
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return fail(events.ReviewUnavailable, fmt.Sprintf("reviewer %s: %s", r.Command, answerFault(err, out)))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail(events.ReviewUnavailable, fmt.Sprintf("reviewer %s: answer is more than one JSON value; want one object", r.Command))
	}
	if a.Verdict != events.VerdictAllow && a.Verdict != events.VerdictDeny {
		return fail(events.ReviewUnavailable, fmt.Sprintf("reviewer answered verdict %q: want allow or deny", a.Verdict))
	}
	if _, ok := review.RiskRank(a.Risk); !ok {
		return fail(events.ReviewUnavailable, fmt.Sprintf("reviewer answered risk %q: want low, medium, high or critical", a.Risk))
	}
	if a.UserAuthorization == "" {
		a.UserAuthorization = review.AuthNone
	}
	if _, ok := review.AuthRank(a.UserAuthorization); !ok {
		return fail(events.ReviewUnavailable, fmt.Sprintf("reviewer answered user_authorization %q: want none, low, medium or high", a.UserAuthorization))
	}
	return review.Answer{
		Verdict: a.Verdict, Risk: review.MaxRisk(req.Risk, a.Risk), UserAuthorization: a.UserAuthorization,
		Evidence: a.Evidence, Offered: offered, EvidenceDropped: req.EvidenceDropped, By: by, Reason: a.Reason,
	}
}

// answerShape is the answer a reviewer program must print, for errors.
const answerShape = `{"verdict":"allow|deny","risk":"low|medium|high|critical","user_authorization":"none|low|medium|high","evidence":[…],"reason":"…"}`

// answerFault says, in the answer's terms, why out is not a
// ReviewerAnswer: not JSON (showing how it begins), not an object, a
// field of the wrong type, an unknown field.
func answerFault(err error, out []byte) string {
	var te *json.UnmarshalTypeError
	switch {
	case len(bytes.TrimSpace(out)) == 0:
		return "answer is empty; want one JSON object " + answerShape
	case errors.As(err, &te) && te.Field == "":
		return "answer is JSON but not an object; want " + answerShape
	case errors.As(err, &te):
		return fmt.Sprintf("answer field %s has the wrong type; want %s", te.Field, answerShape)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "answer has an unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ") + "; want " + answerShape
	}
	begin := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return ' '
		}
		return r
	}, wordCut(strings.TrimSpace(string(out)), 80))
	return fmt.Sprintf("answer is not JSON: it begins %s; want one object %s", begin, answerShape)
}

// limited is a buffer that keeps the first n bytes written.
type limited struct {
	bytes.Buffer
	n    int
	over bool // more than n bytes were written
}

func (l *limited) Write(p []byte) (int, error) {
	room := l.n - l.Len()
	if len(p) > room {
		l.over = true
	}
	if room > 0 {
		l.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// kept returns what was kept, without the word the limit cut in two (a
// secret's tail would not be seen as a secret any more).
func (l *limited) kept() string {
	s := l.String()
	if l.over {
		s = wordCut(s+"x", len(s))
	}
	return s
}

// wordCut cuts s to at most n bytes as cut does, but drops the word the
// cut falls in: no piece of a token (a secret the redaction rules know
// only whole) is left.
func wordCut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := strings.LastIndexAny(s[:n], " \t\r\n")
	if i < 0 {
		return "…"
	}
	return s[:i] + " …"
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
