package httpapi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/reducers/session"
)

// cardsParent is the session of testdata/cards: it runs subagent f0f0
// in the foreground and b0b0 in the background (an async Agent call).
const cardsParent = "5e551011-0000-4000-8000-0000000000c0"

// importCards imports the Claude Code transcripts under roots (each with
// its subagents) and waits for the projection.
func importCards(t *testing.T, e *env, roots ...string) {
	t.Helper()
	ts, err := claude.Discover(roots...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range ts {
		if tr.Path == "" || filepath.Base(tr.Path) == "expected.jsonl" {
			continue
		}
		if _, err := e.ing.ImportTranscript(t.Context(), tr, nil); err != nil {
			t.Fatalf("%s: %v", tr.Path, err)
		}
	}
	last, err := e.log.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e.waitSeq(last)
}

// cardsReply is the part of GET /v1/sessions/{id} the card tests read.
type cardsReply struct {
	Session   session.State `json:"session"`
	Cards     []session.Card
	Subagents *Subagents   `json:"subagents"`
	Usage     SessionUsage `json:"usage"`
}

// checkOwnRows checks each card of r against its subagent session's own
// row: its turns, tool calls, tokens (the row's usage buckets), last
// thing said, depth and kind; and that the subagents' tokens the reply
// reports beside the parent's are the cards' sum, the parent's own
// tokens its row's alone. It returns the cards by session id.
func checkOwnRows(t *testing.T, e *env, r cardsReply) map[string]session.Card {
	t.Helper()
	byID := map[string]session.Card{}
	var sum int64
	for _, c := range r.Cards {
		row, err := e.store.Session(c.Session)
		if err != nil {
			t.Fatalf("card %s: %v", c.Session, err)
		}
		var tokens int64
		for _, b := range row.Usage {
			tokens += b.Input + b.Output + b.CacheWrite + b.CacheRead
		}
		got := [6]any{c.Turns, c.ToolCalls, c.Tokens, c.LastSaid, c.Depth, c.Kind}
		want := [6]any{row.Turns, row.ToolCalls, tokens, row.LastSaid, 1, session.CardAgentTool}
		if got != want {
			t.Errorf("card %s: turns, calls, tokens, said, depth, kind = %v, its row says %v", c.Session, got, want)
		}
		if row.Parent != r.Session.ID {
			t.Errorf("card %s: its row's parent is %q, not %s", c.Session, row.Parent, r.Session.ID)
		}
		if c.LastSaid == "" || strings.Contains(c.LastSaid, "\n") || len(c.LastSaid) > session.MaxLastSaid {
			t.Errorf("card %s: last said %q, want one line of at most %d bytes", c.Session, c.LastSaid, session.MaxLastSaid)
		}
		sum += c.Tokens
		byID[c.Session] = c
	}
	if got := r.Usage.Subagents.Tokens.Total(); got != sum {
		t.Errorf("subagents' tokens %d, the cards sum to %d", got, sum)
	}
	if got, want := r.Usage.Own.Tokens.Total(), r.Session.Tokens(); got != want {
		t.Errorf("parent's own tokens %d, its row's %d", got, want)
	}
	return byID
}

// TestSession_Cards: GET /v1/sessions/{id} answers a card per subagent
// with its own numbers (never the parent's), the parent's
// running/total, and the parent's spend without its subagents'. One
// subagent ran in the foreground and is done; the other was launched in
// the background and still runs; what it said is redacted.
func TestSession_Cards(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	importCards(t, e, "testdata/cards")
	var r cardsReply
	e.get("/v1/sessions/"+cardsParent, 200, &r)
	if r.Subagents == nil || *r.Subagents != (Subagents{Running: 1, Total: 2}) {
		t.Errorf("subagents %+v, want 1 running of 2", r.Subagents)
	}
	cards := checkOwnRows(t, e, r)
	// Each card's cost is its own session's, priced as session show
	// prices it ($0.0006 and $0.0004 in README's example).
	prices, _ := e.api.summaryPrices()
	cost := func(id string) *float64 {
		row, err := e.store.Session(id)
		if err != nil {
			t.Fatal(err)
		}
		return usage.SpendOf([]session.State{row}, prices).Cost
	}
	for id, text := range map[string]string{"agent-f0f0": "0.0006", "agent-b0b0": "0.0004"} {
		if c := cards[id].Cost; c == nil || fmt.Sprintf("%.4f", *c) != text {
			t.Errorf("card %s: cost %v, want $%s as session show prints it", id, c, text)
		}
	}
	want := map[string]session.Card{
		"agent-f0f0": {Session: "agent-f0f0", Kind: session.CardAgentTool, Type: "Explore", Depth: 1, Status: session.CardDone,
			LastSaid: "There are 3 files.", Turns: 1, ToolCalls: 1, Tokens: 450, Model: "claude-haiku-4-5-20251001", Cost: cost("agent-f0f0")},
		"agent-b0b0": {Session: "agent-b0b0", Kind: session.CardAgentTool, Type: "general-purpose", Depth: 1, Background: true, Status: session.CardRunning,
			LastSaid: cards["agent-b0b0"].LastSaid, Turns: 1, ToolCalls: 1, Tokens: 240, Model: "claude-haiku-4-5-20251001", Cost: cost("agent-b0b0")},
	}
	if d := cmp.Diff(want, cards); d != "" {
		t.Errorf("cards (-want +got):\n%s", d)
	}
	if said := cards["agent-b0b0"].LastSaid; strings.Contains(said, "AAAAAAAAAAAA") || !strings.HasPrefix(said, "Running the suite") {
		t.Errorf("background subagent said %q: want its line, redacted", said)
	}
	if got := r.Session.Tokens(); got != 2050 {
		t.Errorf("parent's own tokens %d, want 2050 (its subagents' never folded in)", got)
	}
	// A session that delegated nothing: no count, no cards.
	var lone map[string]any
	e.get("/v1/sessions/agent-f0f0", 200, &lone)
	if _, ok := lone["subagents"]; ok {
		t.Errorf("a subagent without subagents answers a count: %v", lone["subagents"])
	}
	if c, ok := lone["cards"].([]any); !ok || len(c) != 0 {
		t.Errorf("cards %v, want []", lone["cards"])
	}
}

// TestSession_CardsCorpus: the shared corpus's recorded subagent spawn
// (three foreground Explore subagents of one session) gives three cards
// whose numbers are the subagent sessions' own rows, all done, and the
// parent 0 running of 3. Skipped when the corpus is absent.
func TestSession_CardsCorpus(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.Abs("../../../shared/corpus/claude/subagent-spawn")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no shared corpus at %s", dir)
	}
	e := newEnv(t)
	importCards(t, e, dir)
	const parent = "64f42b5c-9da1-4e5f-9ec1-aae47ca0f4c8"
	var r cardsReply
	e.get("/v1/sessions/"+parent, 200, &r)
	if r.Subagents == nil || *r.Subagents != (Subagents{Running: 0, Total: 3}) {
		t.Errorf("subagents %+v, want 0 running of 3", r.Subagents)
	}
	cards := checkOwnRows(t, e, r)
	for id, said := range map[string]string{
		"agent-a31559a022d9a2cb6": "**Total: 135 .go files in core/**",
		"agent-a5435e8f32c1127d1": "I found only one test file in the core/e2e/ directory:",
		"agent-a8662875f7da1388c": `Perfect. Here are the 26 Go files in core/ that import the "sync" package:`,
	} {
		c, ok := cards[id]
		if !ok {
			t.Errorf("no card for %s", id)
			continue
		}
		if c.LastSaid != said || c.Status != session.CardDone || c.Background || c.Tokens == 0 {
			t.Errorf("%s: said %q, status %s, background %v, tokens %d; want %q, done, foreground, some tokens", id, c.LastSaid, c.Status, c.Background, c.Tokens, said)
		}
	}
	// Each card's type is the subagent_type of the parent's Agent call
	// whose result names the subagent's agentId, read here straight
	// from the recording; its cost is its own session's, priced.
	types := corpusAgentTypes(t, filepath.Join(dir, "transcript.jsonl"))
	if len(types) != 3 {
		t.Fatalf("the recording links %d agent ids to a type, want 3: %v", len(types), types)
	}
	for agent, typ := range types {
		c := cards["agent-"+agent]
		if c.Type != typ || typ != "Explore" {
			t.Errorf("agent-%s: type %q, the parent's call asked for %q", agent, c.Type, typ)
		}
		if c.Cost == nil || *c.Cost <= 0 {
			t.Errorf("agent-%s: cost %v, want its own spend priced", agent, c.Cost)
		}
	}
}

// corpusAgentTypes reads a Claude Code transcript and returns, for each
// Agent or Task call whose result names an agentId, that id and the
// subagent_type the call's input asked for.
func corpusAgentTypes(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	byCall := map[string]string{}
	out := map[string]string{}
	for line := range strings.Lines(string(b)) {
		var l struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
			ToolUseResult json.RawMessage `json:"toolUseResult"`
		}
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		var blocks []struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			Name      string `json:"name"`
			ToolUseID string `json:"tool_use_id"`
			Input     struct {
				SubagentType string `json:"subagent_type"`
			} `json:"input"`
		}
		if json.Unmarshal(l.Message.Content, &blocks) != nil {
			continue
		}
		var res struct {
			AgentID string `json:"agentId"`
		}
		_ = json.Unmarshal(l.ToolUseResult, &res)
		for _, bl := range blocks {
			switch {
			case bl.Type == "tool_use" && (bl.Name == "Agent" || bl.Name == "Task"):
				byCall[bl.ID] = bl.Input.SubagentType
			case bl.Type == "tool_result" && res.AgentID != "" && byCall[bl.ToolUseID] != "":
				out[res.AgentID] = byCall[bl.ToolUseID]
			}
		}
	}
	return out
}

// TestBoard_SubagentCards opens the session page of testdata/cards'
// parent in headless Chromium: it shows 1 of 2 subagents running and a
// card for each with what the API answers (kind, foreground or
// background, status, own numbers, the last thing said); a session that
// delegated nothing shows no Subagents section. Screenshot saved (see
// artifacts).
func TestBoard_SubagentCards(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := newEnv(t)
	importCards(t, e, "testdata/cards")
	var r cardsReply
	e.get("/v1/sessions/"+cardsParent, 200, &r)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.http.URL+"/#/s/"+cardsParent)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the cards", `document.querySelectorAll('#session[data-id="`+cardsParent+`"] #cards li.card').length === 2`, 10*time.Second)
	count, _ := chromedp.Run(ctx, chromedp.TextContent("#subagents-count"))
	if count != "1/2 running" {
		t.Errorf("count %q, want 1/2 running", count)
	}
	for _, c := range r.Cards {
		sel := `#cards li.card[data-session="` + c.Session + `"]`
		attrs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => { const li = document.querySelector('`+sel+`'); return li ? [li.dataset.kind, li.dataset.status, li.dataset.background, (li.querySelector(".said") || {}).textContent || "", li.querySelector(".card-nums").textContent] : []; })()`))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{c.Kind, c.Status, fmt.Sprint(c.Background), c.LastSaid,
			fmt.Sprintf("%d turn%s · %d tool call%s · %d tokens", c.Turns, plural(c.Turns), c.ToolCalls, plural(c.ToolCalls), c.Tokens)}
		if d := cmp.Diff(want, attrs); d != "" {
			t.Errorf("card %s (-api +board):\n%s", c.Session, d)
		}
	}
	page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("session").innerText`))
	if strings.Contains(page, "AAAAAAAAAAAA") {
		t.Errorf("the page shows an unredacted secret:\n%s", page)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("subagents-count").scrollIntoView(), window.scrollBy(0, -60), true`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "subagent-cards.png")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash = "#/s/agent-f0f0"`)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the subagent's page", `!!document.querySelector('#session[data-id="agent-f0f0"]')`, 10*time.Second)
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#cards, #subagents-count").length`)); n != 0 {
		t.Errorf("a session that delegated nothing shows %d card elements", n)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
