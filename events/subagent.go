package events

import (
	"errors"
	"fmt"
	"strings"
)

// SubagentPrefix begins a subagent's session id: Claude Code names a
// subagent's session "agent-<agent_id>", and Logbook files a subagent's
// own reports (its hooks, its transcript) under that session, with its
// parent (reducers/session).
const SubagentPrefix = "agent-"

// ErrSubagentID marks a session id from outside input that begins with
// SubagentPrefix (ValidOwnSessionID); such an error wraps ErrMalformed
// too.
var ErrSubagentID = errors.New(`begins with "agent-", which names a subagent's session ("agent-" and its agent id)`)

// IsSubagentID reports whether id, a session aggregate id, has a
// subagent's shape: it begins with SubagentPrefix.
func IsSubagentID(id string) bool { return strings.HasPrefix(id, SubagentPrefix) }

// ValidOwnSessionID reports, wrapping ErrMalformed, an id that outside
// input (a hook's session_id, a transcript's or rollout's session id or
// file name, a telemetry record's session id, a notify payload's
// thread-id) gives a session of its own and that cannot name one: one
// ValidID refuses, or one beginning with SubagentPrefix (wrapping
// ErrSubagentID as well). A session of a subagent's name would take in
// the subagent's reports, whoever its parent is; an agent names a
// subagent by its parent's session id and the agent id instead.
func ValidOwnSessionID(id string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	if IsSubagentID(id) {
		return fmt.Errorf("%w: id %q %w", ErrMalformed, id, ErrSubagentID)
	}
	return nil
}
