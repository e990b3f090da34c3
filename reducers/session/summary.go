package session

import "time"

// Summary is what a list of sessions shows of one session: the fields of
// State that fit on a line, with the open entries counted rather than
// listed. Its JSON (lower snake case, as State's) is a fraction of
// State's, whose lists of call ids, cursors and fingerprints grow with the
// session; lists of thousands of sessions are built from Summaries.
type Summary struct {
	ID         string    `json:"id"`
	Phase      string    `json:"phase"`
	Activity   string    `json:"activity"`
	Open       int       `json:"open"` // open entries
	Turns      int       `json:"turns"`
	ToolCalls  int       `json:"tool_calls"`
	Agent      string    `json:"agent,omitempty"`
	Parent     string    `json:"parent,omitempty"`
	AgentType  string    `json:"agent_type,omitempty"`
	Cwd        string    `json:"cwd,omitempty"`
	Model      string    `json:"model,omitempty"`
	Title      string    `json:"title,omitempty"`
	Mode       string    `json:"mode,omitempty"`
	EndReason  string    `json:"end_reason,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	Since      time.Time `json:"since"`
	ObservedAt time.Time `json:"observed_at"`
	// What a subagent's card (Card) reads of it, and of its parent.
	AgentID      string   `json:"agent_id,omitempty"`
	Depth        int      `json:"depth,omitempty"`
	LastSaid     string   `json:"last_said,omitempty"`
	Released     bool     `json:"released,omitempty"`
	Tokens       int64    `json:"tokens,omitempty"`       // its own usage buckets' tokens, summed
	Backgrounded []string `json:"backgrounded,omitempty"` // State.Backgrounded
	// HeldPath and HeldLine are State's: the transcript line an import
	// stopped at, which does not parse ("" and 0: nothing held).
	HeldPath string `json:"held_path,omitempty"`
	HeldLine int    `json:"held_line,omitempty"`
	// SubagentTypes links the subagents the session started to the
	// agent type it asked for, as State.SubagentTypes holds them (the
	// same JSON as the session's row, so a summary decoded from a row
	// has them).
	SubagentTypes []string `json:"subagent_types,omitempty"`
}

// Summarize returns the Summary of s. It is pure: the same State gives the
// same Summary.
func Summarize(s State) Summary {
	return Summary{
		ID: s.ID, Phase: s.Phase, Activity: s.Activity, Open: len(s.Entries),
		Turns: s.Turns, ToolCalls: s.ToolCalls, Agent: s.Agent, Parent: s.Parent,
		AgentType: s.AgentType, Cwd: s.Cwd, Model: s.Model, Title: s.Title, Mode: s.Mode,
		EndReason: s.EndReason, StartedAt: s.StartedAt, UpdatedAt: s.UpdatedAt,
		Since: s.Since, ObservedAt: s.ObservedAt,
		AgentID: s.AgentID, Depth: s.Depth, LastSaid: s.LastSaid, Released: s.Released,
		Tokens: s.Tokens(), Backgrounded: s.backgrounded(), SubagentTypes: s.subagentTypes(),
		HeldPath: s.HeldPath, HeldLine: s.HeldLine,
	}
}

// Tokens returns the tokens the session itself spent: its usage buckets'
// input, output and cache tokens, summed.
func (s State) Tokens() int64 {
	var n int64
	for _, b := range s.Usage {
		n += b.Tokens()
	}
	return n
}

// LastActivity is when the session's agent was last heard from:
// ObservedAt, or UpdatedAt for a session nothing was observed of (one
// made by the CLI alone). The reconciler's ticks and marks move UpdatedAt
// but are not the agent's activity, so a session marked stale keeps the
// time it went quiet. Lists of sessions sort by it, the most recent first.
func (s Summary) LastActivity() time.Time {
	if s.ObservedAt.IsZero() {
		return s.UpdatedAt
	}
	return s.ObservedAt
}

// backgrounded returns Backgrounded's ids, nil when there are none.
func (s State) backgrounded() []string {
	if s.Backgrounded.IsZero() {
		return nil
	}
	return s.Backgrounded.All()
}
