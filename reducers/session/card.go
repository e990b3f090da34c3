package session

import (
	"strings"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/events"
)

// MaxLastSaid is the longest State.LastSaid, in bytes, its cut mark
// included.
const MaxLastSaid = 120

// RecentBackgrounded is how many backgrounded task ids a State remembers
// (State.Backgrounded).
const RecentBackgrounded = 64

// RecentSubagentTypes is how many links of a call or an agent id to an
// agent type a State remembers (State.SubagentTypes).
const RecentSubagentTypes = 128

// Kinds of a subagent card (Card.Kind).
const (
	// CardAgentTool is a subagent Claude Code's Agent (formerly Task)
	// tool ran: a session agent-<id> with its parent.
	CardAgentTool = "agent_tool"
	// CardSpawnedThread is a thread a Codex thread spawned (session_meta
	// source.subagent.thread_spawn).
	CardSpawnedThread = "spawned_thread"
	// CardSubagent is a subagent of any other agent that links its
	// sessions to a parent.
	CardSubagent = "subagent"
	// CardTask is work the session delegated through Logbook to a
	// workspace (a task aggregate, `logbook task`): the session working
	// there is the card's.
	CardTask = "cli_task"
)

// Statuses of a subagent card (Card.Status).
const (
	CardRunning     = "running"     // its session is working
	CardWaiting     = "waiting"     // its session waits on a person
	CardIdle        = "idle"        // started, no turn yet
	CardDone        = "done"        // its parent took its result, or its turns are over
	CardEnded       = "ended"       // its session ended (Card.EndReason says why)
	CardDelegated   = "delegated"   // a task no session has taken up yet
	CardFailed      = "failed"      // a task whose session failed
	CardInterrupted = "interrupted" // a task whose host restarted with no end seen
)

// Card is what a parent session shows of one of its subagents: which
// kind it is, how deep, whether it runs in the background, its status,
// the last thing it said and its own numbers. Turns, ToolCalls and
// Tokens are the subagent session's own (never its parent's, never its
// own subagents'). Diff is nil unless the caller measured the linked
// workspace (reducers do no I/O).
type Card struct {
	Session    string `json:"session,omitempty"` // the subagent's session id; "" for a task no session took up yet
	Task       string `json:"task,omitempty"`    // the task id, for CardTask
	Kind       string `json:"kind"`              // Card… kind constant
	Type       string `json:"type,omitempty"`    // the agent type ("Explore", a Codex role) or the task's title
	Depth      int    `json:"depth"`             // 1: a subagent of a root session
	Background bool   `json:"background"`        // its parent did not wait for it
	Status     string `json:"status"`            // Card… status constant
	EndReason  string `json:"end_reason,omitempty"`
	LastSaid   string `json:"last_said,omitempty"` // State.LastSaid
	Turns      int    `json:"turns"`
	ToolCalls  int    `json:"tool_calls"`
	Tokens     int64  `json:"tokens"`              // input, output and cache tokens, summed
	Model      string `json:"model,omitempty"`     // the model it last named
	Workspace  string `json:"workspace,omitempty"` // the workspace it works in, when linked
	Diff       *Diff  `json:"diff,omitempty"`
	// Cost is its own session's spend in the price table's currency
	// (USD), priced as `session show` prices it (usage.PriceCards, set
	// outside the log like Diff): nil when no price table is at hand,
	// none of its models has a price, or no session took the task up.
	// Unpriced names its models with no price.
	Cost     *float64 `json:"cost"`
	Unpriced []string `json:"unpriced,omitempty"`
}

// Diff is what changed in a subagent's workspace against its base:
// files changed, lines inserted and lines deleted (binary files count as
// a file only).
type Diff struct {
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
}

// CardOf returns the card of subagent child of parent, from their
// summaries: its kind from child's agent (CardSpawnedThread for Codex,
// CardAgentTool for Claude Code, CardSubagent else), its background flag
// from whether parent backgrounded the work of child's agent id. It is
// pure.
func CardOf(child, parent Summary) Card {
	c := Card{
		Session: child.ID, Type: child.AgentType, Depth: max(child.Depth, 1),
		Status: StatusOf(child), EndReason: child.EndReason, LastSaid: child.LastSaid,
		Turns: child.Turns, ToolCalls: child.ToolCalls, Tokens: child.Tokens, Model: child.Model,
	}
	switch child.Agent {
	case "codex":
		c.Kind = CardSpawnedThread
	case "claude-code", "":
		c.Kind = CardAgentTool
	default:
		c.Kind = CardSubagent
	}
	for _, id := range parent.Backgrounded {
		if id != "" && id == child.AgentID {
			c.Background = true
		}
	}
	if c.Type == "" && child.AgentID != "" {
		// An imported subagent's transcript names no type; the parent's
		// call that started it does.
		c.Type = typeOf(parent.SubagentTypes, "agent:"+child.AgentID)
	}
	return c
}

// StatusOf returns the card status of a subagent session s: CardEnded,
// CardDone when its parent took its result (Released) or its phase is
// ready after a turn, CardIdle ready before any, CardWaiting or
// CardRunning.
func StatusOf(s Summary) string {
	switch {
	case s.Phase == events.PhaseEnded:
		return CardEnded
	case s.Released:
		return CardDone
	case s.Phase == events.PhaseWaiting:
		return CardWaiting
	case s.Phase == events.PhaseWorking:
		return CardRunning
	case s.Turns > 0:
		return CardDone
	}
	return CardIdle
}

// Live reports whether the card's subagent is still at work: running or
// waiting on a person.
func (c Card) Live() bool { return c.Status == CardRunning || c.Status == CardWaiting }

// Delegation counts cards: how many are live (Card.Live) and how many
// there are.
func Delegation(cards []Card) (running, total int) {
	for _, c := range cards {
		if c.Live() {
			running++
		}
	}
	return running, len(cards)
}

// foldSaid folds what o says the model wrote (its last text signal) and
// which calls it sent to the background into s.
func (s *State) foldSaid(o *events.Observation) {
	if o.Kind == events.KindCopy {
		return
	}
	for _, sig := range o.Signals {
		switch {
		case sig.Kind == events.SigText:
			if l := OneLine(sig.Text, MaxLastSaid); l != "" {
				s.LastSaid = l
			}
		case sig.Kind == events.SigToolResult && sig.Status == events.OutcomeBackground && sig.Task != "" && !s.Backgrounded.Has(sig.Task):
			s.Backgrounded = s.Backgrounded.Push(sig.Task, RecentBackgrounded)
		}
		switch {
		case sig.Kind == events.SigToolUse && sig.AgentType != "" && sig.ID != "":
			if v := "tool:" + sig.ID + "=" + sig.AgentType; !s.SubagentTypes.Has(v) {
				s.SubagentTypes = s.SubagentTypes.Push(v, RecentSubagentTypes)
			}
		case sig.Kind == events.SigToolResult && sig.Task != "":
			typ := sig.AgentType
			if typ == "" && sig.ID != "" {
				typ = s.subagentType("tool:" + sig.ID)
			}
			if v := "agent:" + sig.Task + "=" + typ; typ != "" && !s.SubagentTypes.Has(v) {
				s.SubagentTypes = s.SubagentTypes.Push(v, RecentSubagentTypes)
			}
		}
	}
}

// subagentType returns the type SubagentTypes links to key ("tool:<id>"
// or "agent:<id>"), the newest link first, or "".
func (s State) subagentType(key string) string { return typeOf(s.SubagentTypes.All(), key) }

// typeOf returns the type links ("<key>=<type>", oldest first) give
// key, the newest link first, or "".
func typeOf(links []string, key string) string {
	for i := len(links) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(links[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// subagentTypes returns SubagentTypes' links, nil when there are none.
func (s State) subagentTypes() []string {
	if s.SubagentTypes.IsZero() {
		return nil
	}
	return s.SubagentTypes.All()
}

// OneLine returns the first line of text that is not blank, its spaces
// trimmed, cut to at most n bytes (n ≥ 4) on a rune boundary with "…"
// at the cut; "" when text has no such line.
func OneLine(text string, n int) string {
	var line string
	for l := range strings.Lines(text) {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	if len(line) <= n {
		return line
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut] + "…"
}
