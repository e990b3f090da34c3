package top

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
)

// Selected rows are drawn in reverse video, after a "> " mark (which a
// screen read as plain text keeps).
const (
	reverse = "\x1b[7m"
	bold    = "\x1b[1m"
	plain   = "\x1b[0m"
)

// listLine is one line of the list: its text and the row it draws (-1:
// a heading or a blank).
type listLine struct {
	text string
	row  int
}

// View returns the screen as text: at most the terminal's height lines,
// each at most its width columns. Every text from the log in it has
// passed term.Field (or term.Safe, for audit and output text), so none
// of it reaches the terminal as an escape sequence; the only sequences
// are the Model's own (bold headings, the selected row in reverse).
func (m *Model) View() string {
	var lines []string
	switch m.view {
	case viewHelp:
		lines = m.helpLines()
	case viewAudit, viewOutput:
		lines = m.pagerLines()
	default:
		lines = m.listLines()
	}
	for i, l := range lines {
		lines[i] = cutRight(l, m.width)
	}
	if len(lines) > m.height {
		lines = lines[:m.height]
	}
	return strings.Join(lines, "\n")
}

// header returns the first lines: where the data comes from, then
// counts.
func (m *Model) header() []string {
	if !m.loaded {
		return []string{bold + "logbook top" + plain + " · reading…"}
	}
	counts := map[string]int{}
	for _, s := range m.snap.Sessions {
		counts[s.Phase]++
	}
	var parts []string
	for _, p := range phases {
		if counts[p] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[p], p))
		}
	}
	where := bold + "logbook top" + plain + " · " + term.Field(m.snap.Server)
	if m.snap.Host != "" {
		where += " · host " + term.Field(m.snap.Host)
	}
	where += " · " + m.now.Format("15:04:05")
	n := term.Plural(len(m.snap.Sessions), "session")
	if len(parts) > 0 {
		n += " (" + strings.Join(parts, ", ") + ")"
	}
	reviews := term.Plural(len(m.snap.Reviews), "review") + " pending"
	if m.snap.ReviewsHidden {
		reviews = "reviews not shown"
	}
	n += fmt.Sprintf(" · %s · %s", reviews, term.Plural(len(m.snap.Commands), "active command"))
	return []string{where, n}
}

// listLines draws the list view (and the confirm prompt over its foot).
func (m *Model) listLines() []string {
	out := m.header()
	if m.snap.Note != "" {
		out = append(out, term.Field(m.snap.Note))
	}
	if m.err != "" {
		out = append(out, term.Field(m.err))
	}
	var body []listLine
	head := func(s string) { body = append(body, listLine{bold + s + plain, -1}) }
	j := 0
	if len(m.snap.Reviews) > 0 {
		head(fmt.Sprintf("PENDING REVIEWS (%d)", len(m.snap.Reviews)))
		for ; j < len(m.rows) && m.rows[j].kind == rowReview; j++ {
			body = append(body, listLine{m.reviewLine(m.snap.Reviews[m.rows[j].i]), j})
		}
	}
	group := ""
	for ; j < len(m.rows) && m.rows[j].kind == rowSession; j++ {
		s := m.snap.Sessions[m.rows[j].i]
		if s.Phase != group {
			group = s.Phase
			n := 0
			for _, o := range m.snap.Sessions {
				if o.Phase == group {
					n++
				}
			}
			head(fmt.Sprintf("%s (%d)", strings.ToUpper(term.Field(term.Dash(group))), n))
		}
		body = append(body, listLine{m.sessionLine(s), j})
	}
	if len(m.snap.Commands) > 0 {
		head(fmt.Sprintf("ACTIVE COMMANDS (%d)", len(m.snap.Commands)))
		for ; j < len(m.rows); j++ {
			body = append(body, listLine{m.commandLine(m.snap.Commands[m.rows[j].i]), j})
		}
	}
	if m.loaded && len(body) == 0 {
		body = append(body, listLine{"no sessions, reviews or active commands", -1})
	}
	foot := m.footLines()
	room := max(m.height-len(out)-len(foot), 1)
	// Keep the selected row in sight: the window starts where the
	// selected row is its last line, or earlier.
	start := 0
	for i, l := range body {
		if l.row == m.cursor && i >= room {
			start = i - room + 1
		}
	}
	end := min(start+room, len(body))
	for _, l := range body[start:end] {
		text := "  " + l.text
		if l.row >= 0 && l.row == m.cursor {
			text = reverse + "> " + l.text + plain
		}
		out = append(out, text)
	}
	for len(out) < m.height-len(foot) {
		out = append(out, "")
	}
	return append(out, foot...)
}

// footLines returns the bottom lines of the list view: the confirm
// prompt, or the last status and the keys.
func (m *Model) footLines() []string {
	if m.view == viewConfirm {
		r := m.confirm.review
		hint := "type why (it is recorded with the verdict), enter to " + m.confirm.verdict + ", esc to cancel"
		if m.status != "" {
			hint = m.status
		}
		if m.confirm.gone {
			return []string{
				fmt.Sprintf("%sreview %s (%s %s) was decided meanwhile%s", bold, term.Field(r.ID), term.Field(r.Tool), term.Field(term.Blanks(r.Action)), plain),
				hint,
			}
		}
		// The reason has a line of its own, its end in sight however
		// long the action or the reason: what is typed is always shown.
		reason := term.EllipsizeLeft(term.Field(string(m.confirm.reason)), max(m.width-len("reason: ")-1, 2))
		return []string{
			fmt.Sprintf("%s%s review %s (%s %s)?%s", bold, m.confirm.verdict, term.Field(r.ID), term.Field(r.Tool), term.Field(term.Blanks(r.Action)), plain),
			"reason: " + reason + "▏",
			hint,
		}
	}
	keys := "↑↓ select · a allow · d deny · enter audit · o output · r refresh · ? help · q quit"
	if m.status != "" {
		return []string{m.status, keys}
	}
	return []string{"", keys}
}

// reviewLine draws an open review: its id, session, tool, the action in
// short and the budget left.
func (m *Model) reviewLine(r gate.PendingRow) string {
	left := "budget: server's"
	if r.BudgetMS > 0 {
		d := r.RequestedAt.Add(time.Duration(r.BudgetMS) * time.Millisecond).Sub(m.now)
		left = short(d) + " left"
	}
	action := term.Dash(r.Action)
	// The action takes what the other cells leave of the line (the mark
	// of the selected row, 2 columns, included), 40 columns at most.
	aw := min(40, max(12, m.width-2-(14+1+m.shortW+1+10+1)-(1+8+1+len("1m00s left"))))
	return cols(col(cutRight(term.Field(r.ID), 14), 14), col(m.sessionID(r.Session), m.shortW),
		col(cutRight(term.Field(r.Tool), 10), 10), col(cutRight(term.Field(term.Blanks(action)), aw), aw), col(cutRight(term.Field(term.Dash(r.Risk)), 8), 8), left)
}

// col pads s with spaces to width terminal columns (term.DisplayWidth:
// a wide character takes two), as fmt's %-*s pads to a count of
// characters.
func col(s string, width int) string {
	if n := term.DisplayWidth(stripOwn(s)); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// cols joins a line's cells with one space.
func cols(cells ...string) string { return strings.Join(cells, " ") }

// sessionLine draws a session: its id's first characters, agent, title
// (or working directory), activity and phase age.
func (m *Model) sessionLine(s session.Summary) string {
	what := s.Title
	if what == "" {
		what = s.Cwd
	}
	title := term.Field(term.Dash(what))
	if s.Title == "" && s.Cwd != "" {
		title = term.EllipsizeLeft(title, 40)
	}
	age := "—"
	if !s.Since.IsZero() && !m.now.IsZero() {
		age = short(m.now.Sub(s.Since))
	}
	return cols(col(m.sessionID(s.ID), m.shortW), col(cutRight(term.Field(term.Dash(s.Agent)), 12), 12),
		col(cutRight(title, 40), 40), col(cutRight(term.Field(term.Dash(s.Activity)), 22), 22), age)
}

// commandLine draws an active command: id, session, status and argv.
func (m *Model) commandLine(c command.State) string {
	argv := term.Argv(c.Argv)
	return cols(col(prefix(term.Field(c.ID), 12), 12), col(m.sessionID(c.Session), m.shortW),
		col(cutRight(term.Field(term.Dash(c.Status)), 10), 10), term.Field(term.Blanks(argv)))
}

// pagerLines draws the audit or output view.
func (m *Model) pagerLines() []string {
	out := []string{bold + m.pager.title + plain}
	n := m.pagerRows()
	end := min(m.pager.top+n, len(m.pager.lines))
	if m.pager.top < end {
		out = append(out, m.pager.lines[m.pager.top:end]...)
	}
	for len(out) < n+1 {
		out = append(out, "")
	}
	state := fmt.Sprintf("lines %d–%d of %d", min(m.pager.top+1, len(m.pager.lines)), end, len(m.pager.lines))
	if m.view == viewOutput {
		if m.pager.ended != "" {
			state += " · " + m.pager.ended
		} else {
			state += " · following"
		}
	}
	return append(out, state, "↑↓ pgup pgdn home end scroll · q or esc back · ? help")
}

// helpLines draws the keys.
func (m *Model) helpLines() []string {
	return []string{
		bold + "logbook top: keys" + plain,
		"",
		"  ↑ ↓ k j        select a row (pgup pgdn home end: further)",
		"  a              allow the selected pending review (asks for a reason; enter sends, esc cancels)",
		"  d              deny the selected pending review (asks for a reason; enter sends, esc cancels)",
		"  enter          the audit of the selected session (or of a review's or a command's session)",
		"  o              follow the selected active command's output",
		"  r              refresh now",
		"  q, esc         back from an audit or an output; q in the list quits",
		"  ctrl+c         quit",
		"  ?              this help",
		"",
		"Verdicts are recorded as " + events.DecidedByUser + " person:<you>@<host>, as `logbook review allow|deny` records them.",
		"",
		"any key to go back",
	}
}

// cutRight keeps the start of s, at most width terminal columns
// (term.DisplayWidth, escape sequences the Model wrote taking none),
// ending in "…" when cut.
func cutRight(s string, width int) string {
	if term.DisplayWidth(stripOwn(s)) <= width {
		return s
	}
	var b strings.Builder
	w := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			// One of the Model's own sequences: CSI … m.
			j := strings.IndexByte(s[i:], 'm')
			if j < 0 {
				break
			}
			b.WriteString(s[i : i+j+1])
			i += j + 1
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		rw := term.RuneWidth(r)
		if w+rw > width-1 {
			break
		}
		b.WriteString(s[i : i+size])
		w += rw
		i += size
	}
	b.WriteString("…")
	if strings.Contains(s, "\x1b[") {
		b.WriteString(plain)
	}
	return b.String()
}

// prefix returns the first n characters of id, an id whose start tells
// it apart, without a mark of the cut.
func prefix(id string, n int) string {
	if len(id) <= n {
		return id
	}
	for i := range id {
		if i >= n {
			return id[:i]
		}
	}
	return id
}

// stripOwn returns s without the Model's own sequences.
func stripOwn(s string) string {
	for _, seq := range []string{reverse, bold, plain} {
		s = strings.ReplaceAll(s, seq, "")
	}
	return s
}
