package top

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// snap returns a snapshot with one open review, a session in each phase
// and an active command.
func snap() Snapshot {
	return Snapshot{
		Server: "serve pid 7 at nats://127.0.0.1:4222", Host: "build-3", At: t0,
		Reviews: []gate.PendingRow{{Session: "5e55aaaa-0001", PendingReview: session.PendingReview{
			ID: "toolu_push", Tool: "Bash", Action: "git push origin main", RequestedAt: t0.Add(-20 * time.Second), BudgetMS: 60_000}}},
		Sessions: []session.Summary{
			{ID: "5e55aaaa-0003", Phase: events.PhaseReady, Agent: "claude-code", Cwd: "/src/ready", Since: t0.Add(-time.Hour)},
			{ID: "5e55aaaa-0001", Phase: events.PhaseWaiting, Agent: "claude-code", Title: "release", Activity: "review", Since: t0.Add(-20 * time.Second)},
			{ID: "5e55aaaa-0002", Phase: events.PhaseWorking, Agent: "codex", Title: "fix the parser", Activity: "tool:Bash", Since: t0.Add(-3 * time.Minute)},
		},
		Commands: []command.State{{ID: "c0ffee00-0001", Session: "5e55aaaa-0002", Status: command.StatusStarted, Argv: []string{"go", "test", "./..."}}},
	}
}

// key is the key press a terminal sends for s: a key's name as
// bubbletea writes it, or the text typed.
func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case " ":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	r := []rune(s)
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

// typeText sends s to m a character at a time.
func typeText(m *Model, s string) {
	for _, r := range s {
		m.Key(key(string(r)))
	}
}

// loaded returns a Model of 120×30 showing snap().
func loaded() *Model {
	m := New()
	m.SetSize(120, 30)
	m.SetSnapshot(snap(), t0, nil)
	return m
}

// plainView returns m's screen without the Model's own sequences.
func plainView(m *Model) string { return stripOwn(m.View()) }

func TestModel_PendingFirstThenPhases(t *testing.T) {
	m := loaded()
	v := plainView(m)
	order := []string{"PENDING REVIEWS (1)", "toolu_push", "WORKING (1)", "fix the parser", "WAITING (1)", "release", "READY (1)", "/src/ready", "ACTIVE COMMANDS (1)", "go test ./..."}
	at := 0
	for _, want := range order {
		i := strings.Index(v[at:], want)
		if i < 0 {
			t.Fatalf("view lacks %q after offset %d:\n%s", want, at, v)
		}
		at += i + len(want)
	}
	for _, want := range []string{"build-3", "3 sessions (1 working, 1 waiting, 1 ready)", "1 review pending", "1 active command", "> toolu_push", "40s left", "3m00s", "codex"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
}

func TestModel_AllowAsksAReasonThenDecides(t *testing.T) {
	m := loaded()
	if act := m.Key(key("a")); act != nil {
		t.Fatalf("a: %#v, want nothing before the reason", act)
	}
	if v := plainView(m); !strings.Contains(v, "allow review toolu_push (Bash git push origin main)?\nreason: ▏") {
		t.Fatalf("no prompt:\n%s", v)
	}
	// Enter with no reason sends nothing, and says why.
	if act := m.Key(key("enter")); act != nil {
		t.Fatalf("enter with no reason: %#v", act)
	}
	if v := plainView(m); !strings.Contains(v, "type a reason first") {
		t.Errorf("no word on the missing reason:\n%s", v)
	}
	// q and d are text here, not keys.
	typeText(m, "shipq")
	m.Key(key("backspace"))
	m.Key(key(" "))
	typeText(m, "day")
	got := m.Key(key("enter"))
	want := Decide{Session: "5e55aaaa-0001", Review: "toolu_push", Verdict: events.VerdictAllow, Reason: "ship day"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("enter: (-want +got)\n%s", diff)
	}
	if v := plainView(m); strings.Contains(v, "reason:") {
		t.Errorf("prompt still shown after enter:\n%s", v)
	}
}

func TestModel_DenyCancelled(t *testing.T) {
	m := loaded()
	m.Key(key("d"))
	typeText(m, "no")
	if act := m.Key(key("esc")); act != nil {
		t.Fatalf("esc: %#v", act)
	}
	if v := plainView(m); strings.Contains(v, "reason:") || !strings.Contains(v, "cancelled") {
		t.Errorf("after esc:\n%s", v)
	}
	// The next d starts with an empty reason.
	m.Key(key("d"))
	typeText(m, "later")
	if got, want := m.Key(key("enter")), (Decide{Session: "5e55aaaa-0001", Review: "toolu_push", Verdict: events.VerdictDeny, Reason: "later"}); got != want {
		t.Errorf("deny: %#v, want %#v", got, want)
	}
}

func TestModel_AllowNeedsAReview(t *testing.T) {
	m := loaded()
	m.Key(key("down")) // the working session
	if act := m.Key(key("a")); act != nil {
		t.Fatalf("a on a session: %#v", act)
	}
	if v := plainView(m); !strings.Contains(v, "select a pending review first") {
		t.Errorf("no word on it:\n%s", v)
	}
	if act := m.Key(key("o")); act != nil {
		t.Fatalf("o on a session: %#v", act)
	}
}

func TestModel_ReviewDecidedWhileConfirming(t *testing.T) {
	m := loaded()
	m.Key(key("a"))
	s := snap()
	s.Reviews = nil
	m.SetSnapshot(s, t0.Add(time.Second), nil)
	v := plainView(m)
	if strings.Contains(v, "reason:") || !strings.Contains(v, "was decided meanwhile") {
		t.Errorf("prompt for a review no longer open:\n%s", v)
	}
	if act, ok := m.Key(key("enter")).(Decide); ok {
		t.Errorf("enter after the review closed: %#v", act)
	}
}

// Keys typed ahead into a prompt whose review was decided meanwhile
// stay in the prompt until esc: none reaches the list, where the
// reason's letters would answer another review (a opens an allow, enter
// sends it).
func TestModel_TypeAheadAfterReviewDecided(t *testing.T) {
	m := loaded()
	m.Key(key("a"))
	typeText(m, "ok, ")
	s := snap()
	s.Reviews = []gate.PendingRow{{Session: "5e55aaaa-0002", PendingReview: session.PendingReview{
		ID: "toolu_force", Tool: "Bash", Action: "git push --force origin main", RequestedAt: t0, BudgetMS: 60_000}}}
	m.SetSnapshot(s, t0.Add(time.Second), nil)
	for _, k := range []string{"a", "l", "l", "o", "w", " ", "i", "t", "enter", "d", "enter", "q", "j"} {
		if act := m.Key(key(k)); act != nil {
			t.Fatalf("key %q typed ahead acted: %#v", k, act)
		}
	}
	if v := plainView(m); !strings.Contains(v, "toolu_push (Bash git push origin main) was decided meanwhile") || !strings.Contains(v, "esc to go back") {
		t.Errorf("the prompt of a decided review:\n%s", v)
	}
	m.Key(key("esc"))
	if v := plainView(m); strings.Contains(v, "decided meanwhile") || !strings.Contains(v, "toolu_force") {
		t.Errorf("after esc:\n%s", v)
	}
	// Back in the list, keys act again.
	if m.Key(key("a")); !strings.Contains(plainView(m), "reason:") {
		t.Errorf("a after esc opens no prompt:\n%s", plainView(m))
	}
}

// Text pasted on a terminal that does not bracket pastes comes as keys
// microseconds apart: an "a" in it opens the prompt, the rest types a
// reason, and its line break is an enter that sends nothing. An enter
// the person presses afterwards sends the verdict, as does one typed at
// a person's pace.
func TestModel_UnbracketedPasteAnswersNothing(t *testing.T) {
	m := loaded()
	at := t0
	press := func(k string, gap time.Duration) Action {
		at = at.Add(gap)
		return m.KeyAt(key(k), at)
	}
	for _, k := range []string{"a", "b", "c", "enter", "d", "e", "enter"} {
		if act := press(k, 20*time.Microsecond); act != nil {
			t.Fatalf("pasted key %q acted: %#v", k, act)
		}
	}
	if v := plainView(m); !strings.Contains(v, "came with a burst of keys") || !strings.Contains(v, "reason: bcde") {
		t.Errorf("after a paste with line breaks:\n%s", v)
	}
	act, ok := press("enter", 400*time.Millisecond).(Decide)
	if !ok || act.Verdict != events.VerdictAllow || act.Reason != "bcde" {
		t.Fatalf("enter pressed after the paste = %#v, want the allow with its reason", act)
	}
	// Typed at a person's pace, keys 60 ms apart, the enter sends.
	press("d", time.Second)
	for _, k := range []string{"n", "o"} {
		press(k, 60*time.Millisecond)
	}
	if act, ok := press("enter", 60*time.Millisecond).(Decide); !ok || act.Verdict != events.VerdictDeny || act.Reason != "no" {
		t.Fatalf("enter typed at a person's pace = %#v, want the deny", act)
	}
}

// The reason is what was typed: spaces around it kept, a paste's line
// breaks and tabs kept (its CRs as line feeds), up to the gate's 1000
// bytes, past which it says so.
func TestModel_ReasonAsTyped(t *testing.T) {
	m := loaded()
	m.Key(key("a"))
	typeText(m, "  ship ")
	m.Paste("it\r\nnow\tok  ")
	act, ok := m.Key(key("enter")).(Decide)
	if !ok || act.Reason != "  ship it\nnow\tok  " {
		t.Fatalf("decide %#v", act)
	}
	m.Key(key("a"))
	m.Paste(strings.Repeat("é", 600)) // 1200 bytes
	if v := plainView(m); !strings.Contains(v, "at its limit of 1000 bytes") {
		t.Errorf("no word of the limit:\n%s", v)
	}
	act, ok = m.Key(key("enter")).(Decide)
	if !ok || act.Reason != strings.Repeat("é", 500) {
		t.Fatalf("decide: %d bytes", len(act.Reason))
	}
}

func TestModel_SelectionStaysOnItsItem(t *testing.T) {
	m := loaded()
	m.Key(key("down"))
	m.Key(key("down")) // the waiting session, 5e55aaaa-0001
	s := snap()
	s.Reviews = nil // one row fewer above it
	m.SetSnapshot(s, t0.Add(time.Second), nil)
	if got := m.selectedSession(); got != "5e55aaaa-0001" {
		t.Errorf("selected %s after the refresh, want 5e55aaaa-0001", got)
	}
	// A note of what the snapshot lacks shows under the header.
	s.Note = "reviews not shown: the reader role may not call the API's reviews"
	m.SetSnapshot(s, t0.Add(time.Second), nil)
	if v := plainView(m); !strings.Contains(v, s.Note) {
		t.Errorf("note not shown:\n%s", v)
	}
	// A failed refresh keeps what was shown, and says so.
	m.SetSnapshot(Snapshot{}, t0.Add(2*time.Second), fmt.Errorf("ask server (sessions): no responders"))
	v := plainView(m)
	if !strings.Contains(v, "refresh failed: ask server (sessions): no responders") || !strings.Contains(v, "fix the parser") {
		t.Errorf("after a failed refresh:\n%s", v)
	}
}

func TestModel_AuditPager(t *testing.T) {
	m := loaded()
	m.Key(key("down")) // the working session
	got := m.Key(key("enter"))
	if want := (OpenAudit{Session: "5e55aaaa-0002"}); got != want {
		t.Fatalf("enter: %#v, want %#v", got, want)
	}
	var text strings.Builder
	for i := range 100 {
		fmt.Fprintf(&text, "#%d session.transitioned\n", i+1)
	}
	m.SetAudit("5e55aaaa-0001", "another session's\n", nil) // dropped
	m.SetAudit("5e55aaaa-0002", text.String(), nil)
	v := plainView(m)
	if !strings.Contains(v, "audit of session 5e55aaaa-0002") || !strings.Contains(v, "#1 session") || strings.Contains(v, "another") {
		t.Fatalf("audit view:\n%s", v)
	}
	m.Key(key("G"))
	if v := plainView(m); !strings.Contains(v, "#100 session") || !strings.Contains(v, "of 100") {
		t.Errorf("at the end:\n%s", v)
	}
	if act := m.Key(key("q")); act != nil {
		t.Errorf("q in the audit: %#v, want back to the list", act)
	}
	if v := plainView(m); !strings.Contains(v, "PENDING REVIEWS") {
		t.Errorf("q did not go back:\n%s", v)
	}
	if _, ok := m.Key(key("q")).(Quit); !ok {
		t.Errorf("q in the list does not quit")
	}
}

func TestModel_FollowOutput(t *testing.T) {
	m := loaded()
	m.Key(key("G")) // the command, last
	got := m.Key(key("o"))
	if want := (FollowOutput{Command: "c0ffee00-0001"}); got != want {
		t.Fatalf("o: %#v, want %#v", got, want)
	}
	m.AddOutput("c0ffee00-0001", []byte("line 1\nan OSC title \x1b]0;pwn"))
	m.AddOutput("c0ffee00-0001", []byte("ed\x07 and\tcolour \x1b[31mred\x1b[0m\n"))
	for i := range 60 {
		m.AddOutput("c0ffee00-0001", fmt.Appendf(nil, "ok %d\n", i))
	}
	m.AddOutput("other", []byte("not this one\n"))
	m.OutputEnded("c0ffee00-0001", "exited with code 0", nil)
	v := m.View()
	if !strings.Contains(v, "ok 59") || !strings.Contains(v, "command exited with code 0") || strings.Contains(v, "not this one") {
		t.Fatalf("output view, following, shows its end:\n%s", v)
	}
	m.Key(key("g"))
	v = m.View()
	if !strings.Contains(v, "an OSC title  and       colour red") {
		t.Errorf("sequences not removed or tabs not expanded:\n%q", v)
	}
	if strings.Contains(stripOwn(v), "\x1b") || strings.Contains(v, "pwned") {
		t.Errorf("an escape sequence of the output reached the screen:\n%q", v)
	}
	if _, ok := m.Key(key("esc")).(StopFollow); !ok {
		t.Errorf("esc in the output view does not stop following")
	}
}

func TestModel_HostileTextEscaped(t *testing.T) {
	s := snap()
	s.Sessions[0].Title = "title\x1b]52;c;ZXZpbA==\x07\x1b[2J"
	s.Reviews[0].Action = "git push \x1b[8mhidden\x1b[0m\u202eevil"
	s.Reviews[0].Tool = "Bash\r\n"
	m := New()
	m.SetSize(160, 30)
	m.SetSnapshot(s, t0, nil)
	m.Key(key("a"))
	m.SetStatus("allow review failed: review toolu_push was decided by \x1b]0;x\x07 before")
	v := stripOwn(m.View())
	if strings.ContainsAny(v, "\x1b\x07\r\u202e") {
		t.Errorf("a control of the log reached the screen:\n%q", v)
	}
	for _, want := range []string{`title\x1b]52;c;ZXZpbA==\x07`, `\x1b[8mhidden`, `Bash\r\n`, `decided by \x1b]0;x\x07 before`} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q, escaped:\n%s", want, v)
		}
	}
}

func TestModel_ViewFitsTheTerminal(t *testing.T) {
	s := snap()
	for i := range 40 {
		s.Sessions = append(s.Sessions, session.Summary{ID: fmt.Sprintf("5e55bbbb-%04d", i), Phase: events.PhaseWorking, Title: strings.Repeat("長い題名 ", 20)})
	}
	m := New()
	m.SetSize(60, 12)
	m.SetSnapshot(s, t0, nil)
	for range 30 {
		m.Key(key("down"))
	}
	v := m.View()
	lines := strings.Split(v, "\n")
	if len(lines) > 12 {
		t.Errorf("%d lines on a screen of 12", len(lines))
	}
	for _, l := range lines {
		if w := term.DisplayWidth(stripOwn(l)); w > 60 {
			t.Errorf("line of %d columns on a screen of 60: %q", w, l)
		}
	}
	if !strings.Contains(v, "> ") {
		t.Errorf("the selected row is out of sight:\n%s", v)
	}
}

func TestModel_HelpAndQuit(t *testing.T) {
	m := loaded()
	m.Key(key("?"))
	if v := plainView(m); !strings.Contains(v, "logbook top: keys") {
		t.Fatalf("help:\n%s", v)
	}
	if act := m.Key(key("q")); act != nil {
		t.Errorf("a key in help: %#v, want back", act)
	}
	m.Key(key("a"))
	if _, ok := m.Key(key("ctrl+c")).(Quit); !ok {
		t.Errorf("ctrl+c while typing a reason does not quit")
	}
	m.Key(key("esc"))
	if _, ok := m.Key(key("r")).(Refresh); !ok {
		t.Errorf("r does not refresh")
	}
}

// Columns line up in terminal cells, wide characters taking two; session
// ids are shortened as `logbook sessions` shortens them, so subagents
// whose ids share a start stay apart; and the reason being typed is in
// sight however long the action.
func TestModel_Layout(t *testing.T) {
	m := New()
	m.SetSize(100, 30)
	s := snap()
	s.Reviews = []gate.PendingRow{
		{Session: "agent-a1f00001", PendingReview: session.PendingReview{ID: "toolu_wide", Tool: "Bash", Action: "echo 全角文字で書かれた説明", Risk: "high", RequestedAt: t0, BudgetMS: 60_000}},
		{Session: "agent-a1f00002", PendingReview: session.PendingReview{ID: "toolu_narrow", Tool: "Bash", Action: "echo plain", Risk: "high", RequestedAt: t0, BudgetMS: 60_000}},
	}
	s.Sessions = append(s.Sessions,
		session.Summary{ID: "agent-a1f00001", Phase: events.PhaseWaiting, Agent: "claude-code", Title: "one", Since: t0},
		session.Summary{ID: "agent-a1f00002", Phase: events.PhaseWaiting, Agent: "claude-code", Title: "two", Since: t0},
		session.Summary{ID: "agent-a1f00003", Phase: events.PhaseWaiting, Agent: "claude-code", Title: "three", Since: t0})
	m.SetSnapshot(s, t0, nil)
	v := plainView(m)
	riskAt := func(id string) int {
		for line := range strings.Lines(v) {
			if strings.Contains(line, id) {
				return term.DisplayWidth(line[:strings.Index(line, " high ")])
			}
		}
		t.Fatalf("no line of %s:\n%s", id, v)
		return 0
	}
	if a, b := riskAt("toolu_wide"), riskAt("toolu_narrow"); a != b {
		t.Errorf("the risk column at cell %d after a wide action, %d after a narrow one:\n%s", a, b, v)
	}
	for _, id := range []string{"agent-a1f00001", "agent-a1f00002", "agent-a1f00003"} {
		if !strings.Contains(v, id+" ") {
			t.Errorf("session %s not told apart:\n%s", id, v)
		}
	}
	if budget := "1m00s left"; strings.Count(v, budget) != 2 {
		t.Errorf("a review's budget is cut off at 100 columns:\n%s", v)
	}

	m.SetSize(60, 30)
	s.Reviews[1].Action = "git push origin " + strings.Repeat("b", 320)
	m.SetSnapshot(s, t0, nil)
	m.Key(key("down"))
	m.Key(key("a"))
	typeText(m, "release it")
	if v := plainView(m); !strings.Contains(v, "reason: release it▏") {
		t.Errorf("the reason typed is out of sight:\n%s", v)
	}
}

// Reviews a reader's credentials may not list are said to be hidden, not
// counted as none pending.
func TestModel_ReviewsHidden(t *testing.T) {
	m := New()
	m.SetSize(120, 30)
	s := snap()
	s.Reviews, s.ReviewsHidden, s.Note = nil, true, "reviews not shown: denied"
	m.SetSnapshot(s, t0, nil)
	if v := plainView(m); strings.Contains(v, "0 reviews pending") || !strings.Contains(v, "reviews not shown ·") {
		t.Errorf("header:\n%s", v)
	}
}
