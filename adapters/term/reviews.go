package term

import (
	"fmt"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/adapters/gate"
)

// AmbiguousReviews says that id names more than one of the open reviews
// cands: the same id open in several sessions (exact) or a prefix
// several ids begin with. It lists up to 10 of them (id, session, tool,
// each through Field) and what to do: name one with --session, or give
// more of the id.
func AmbiguousReviews(cands []gate.PendingRow, id string, exact bool) string {
	var msg strings.Builder
	if exact {
		fmt.Fprintf(&msg, "review %s is open in %d sessions:", id, len(cands))
	} else {
		fmt.Fprintf(&msg, "review id prefix %q is ambiguous: %d open reviews begin with it:", id, len(cands))
	}
	const show = 10
	for _, r := range cands[:min(len(cands), show)] {
		fmt.Fprintf(&msg, "\n  %s  (session %s, %s)", Field(r.ID), Field(r.Session), Field(r.Tool))
	}
	if len(cands) > show {
		fmt.Fprintf(&msg, "\n  … and %d more", len(cands)-show)
	}
	if exact {
		msg.WriteString("\nname one with --session")
	} else {
		msg.WriteString("\ngive more of the id")
	}
	return msg.String()
}

// AmbiguousID says that the id prefix id names more than one aggregate
// of kind ("session", "command"): it lists up to 10 of ids, sorted, and
// asks for more of the id.
func AmbiguousID(kind, id string, ids []string) string {
	ids = slices.Sorted(slices.Values(ids))
	const show = 10
	var b strings.Builder
	fmt.Fprintf(&b, "%s id prefix %q is ambiguous: %d %ss begin with it:", kind, id, len(ids), kind)
	for _, c := range ids[:min(len(ids), show)] {
		fmt.Fprintf(&b, "\n  %s", c)
	}
	if len(ids) > show {
		fmt.Fprintf(&b, "\n  … and %d more", len(ids)-show)
	}
	b.WriteString("\ngive more of the id")
	return b.String()
}
