package gate

import (
	"encoding/json"
	"fmt"
)

// ClaudeAnswer returns what `logbook hook claude --gate` prints on stdout
// for Claude Code hook event (PreToolUse or PermissionRequest), in the
// hook contract of Claude Code's hooks reference:
//
//	PreToolUse         {"hookSpecificOutput":{"hookEventName":"PreToolUse",
//	                    "permissionDecision":"allow"|"deny","permissionDecisionReason":…}}
//	PermissionRequest  {"hookSpecificOutput":{"hookEventName":"PermissionRequest",
//	                    "decision":{"behavior":"allow"|"deny","message":…}}}
//
// With the breaker tripped it adds "continue": false and a "stopReason",
// which stops the agent. DecideNone prints nothing (nil): the agent's own
// permission flow applies. The reason given to the agent says who
// decided, the outcome and what it means (review.Told).
func ClaudeAnswer(event string, v Verdict) []byte {
	if v.Decision == DecideNone {
		return nil
	}
	reason := Explain(v)
	out := map[string]any{}
	switch event {
	case EventPermissionRequest:
		d := map[string]any{"behavior": v.Decision}
		if v.Decision == DecideDeny {
			d["message"] = reason
			if v.Breaker {
				d["interrupt"] = true
			}
		}
		out["hookSpecificOutput"] = map[string]any{"hookEventName": EventPermissionRequest, "decision": d}
	default:
		out["hookSpecificOutput"] = map[string]any{
			"hookEventName": EventPreToolUse, "permissionDecision": v.Decision, "permissionDecisionReason": reason,
		}
	}
	if v.Breaker {
		out["continue"] = false
		out["stopReason"] = "Logbook's refusal breaker tripped: too many refused actions in this session. Stop and ask the user how to go on."
	}
	b, _ := json.Marshal(out)
	return append(b, '\n')
}

// Explain says a verdict in one line for the agent and for people.
func Explain(v Verdict) string {
	who := v.By.Kind
	if v.By.Name != "" {
		who += " " + v.By.Name
	}
	if who == "" {
		who = "the gate"
	}
	s := fmt.Sprintf("Logbook gate: %s by %s", v.Decision, who)
	if v.ReviewID != "" {
		s += " (review " + v.ReviewID + ")"
	}
	if v.Reason != "" {
		s += ": " + v.Reason
	}
	if v.Told != "" {
		s += ". Outcome " + v.Told
	}
	return s
}

// FailClosed is the verdict the hook answers when it has none: the server
// is down, no answer came within the budget, the hook itself failed. It
// is a deny, outcome unavailable, with why.
func FailClosed(why string) Verdict {
	return Verdict{Decision: DecideDeny, Outcome: "unavailable", Reason: why, Told: toldUnavailable}
}

const toldUnavailable = "unavailable: no reviewer could run, so no judgement was made; ask the user, do not work around it"
