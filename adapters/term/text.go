package term

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/internal/words"
)

// IsTerminal reports whether w is a terminal (an *os.File on a tty).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Width returns the width of terminal w in columns, or 0 when w is not a
// terminal (or says nothing of its size).
func Width(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// Plural returns "1 thing" or "n things": the noun's plural is noun+"s"
// unless given (words.Plural, which the packages below term share).
func Plural(n int, noun string, pl ...string) string { return words.Plural(n, noun, pl...) }

// Ago says how long before now t was, as a person reads it on a
// terminal: "just now" (under 10 s), "3m ago", "2h ago" (under 48 h),
// "5d ago", "3y ago" (from 1000 days on, in years of 365.25 days, or of
// the calendar past the ~292 years a time.Duration holds); "-" for the
// zero time, "in 2m" for a time ahead of now.
func Ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	// Each way round a subtraction saturates at the longest Duration;
	// negating the shortest would overflow.
	d, suffix := now.Sub(t), " ago"
	if t.After(now) {
		d, suffix = t.Sub(now), ""
	}
	const year = 8766 * time.Hour // 365.25 days
	var s string
	switch {
	case d < 10*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	case d < 1000*24*time.Hour:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	case d == math.MaxInt64: // saturated: count the calendar's years
		s = fmt.Sprintf("%dy", max(now.Year()-t.Year(), t.Year()-now.Year()))
	default:
		s = fmt.Sprintf("%dy", int(d/year))
	}
	if suffix == "" {
		return "in " + s
	}
	return s + suffix
}

// HomeTilde writes a path under the home directory home with "~" in its
// place; a home of "" or "/" leaves path as it is.
func HomeTilde(path, home string) string {
	if home == "" || home == "/" {
		return path
	}
	if path == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(path, home+"/"); ok {
		return "~/" + rest
	}
	return path
}

// Dash returns s, or "-" when s is empty or only white space: a cell
// never left blank.
func Dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// subagentIDPrefix begins a subagent's session id (reducers/session).
const subagentIDPrefix = "agent-"

// ShortIDs returns, for each of ids, its shortest prefix of at least
// least characters that no other of ids begins with; an id of up to
// 2*least characters is shown whole. A subagent's session id counts its
// characters after "agent-" (reducers/session: "agent-" and the agent's
// own id, which Claude Code begins with "a"): "agent-a3" would name
// every subagent whose id begins with "a3". A prefix is never cut just
// after a '-': it goes on to the end of the part after it. The result
// is in the order of ids.
func ShortIDs(ids []string, least int) []string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	common := func(a, b string) int {
		n := 0
		for n < len(a) && n < len(b) && a[n] == b[n] {
			n++
		}
		return n
	}
	need := make(map[string]int, len(ids))
	for i, id := range sorted {
		fixed := 0 // leading characters that tell nothing apart
		if strings.HasPrefix(id, subagentIDPrefix) {
			fixed = len(subagentIDPrefix)
		}
		n := fixed + least
		if i > 0 {
			n = max(n, common(id, sorted[i-1])+1)
		}
		if i+1 < len(sorted) {
			n = max(n, common(id, sorted[i+1])+1)
		}
		if len(id)-fixed <= 2*least {
			n = len(id) // short enough to show whole
		}
		if n < len(id) && id[n-1] == '-' {
			// A prefix that ends at a separator (the whole of another id,
			// as a rewritten history's "<id>-r1" beside "<id>") goes on
			// to the end of the part after it.
			if k := strings.IndexByte(id[n:], '-'); k >= 0 {
				n += k
			} else {
				n = len(id)
			}
		}
		need[id] = min(n, len(id))
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:need[id]]
	}
	return out
}
