package top

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
)

// Snapshot is what one refresh read from the server: the open reviews
// (oldest first, as the reviews verb answers), the sessions a listing
// shows (the most recently active first, ended ones over a day old left
// out, as `logbook sessions` lists them) and the active commands. Server
// and Host name where it came from, for the header; At is the client's
// clock when it was read. Every text in it is as the log holds it,
// hostile or not: the Model escapes it before drawing. Note, when set,
// says what the snapshot lacks and why (reviews a reader's credentials
// may not list), under the header; ReviewsHidden says that Reviews is
// empty because they could not be read, not because none is open.
type Snapshot struct {
	Server        string
	Host          string
	Note          string
	ReviewsHidden bool
	At            time.Time
	Reviews       []gate.PendingRow
	Sessions      []session.Summary
	Commands      []command.State
}

// Action is what a key asks of the program around the Model: nil for
// nothing beyond the Model's own change. One of Decide, OpenAudit,
// FollowOutput, StopFollow, Refresh and Quit.
type Action interface{ action() }

// Decide asks to answer review Review of session Session with Verdict
// (events.VerdictAllow or events.VerdictDeny) and Reason, as typed (not
// blank, not yet redacted), on the person's word.
type Decide struct{ Session, Review, Verdict, Reason string }

// OpenAudit asks for session Session's audit timeline, as text
// (Model.SetAudit takes it).
type OpenAudit struct{ Session string }

// FollowOutput asks to follow command Command's output from its start
// until it ends (Model.AddOutput and Model.OutputEnded take it).
type FollowOutput struct{ Command string }

// StopFollow asks to stop following the command output being shown.
type StopFollow struct{}

// Refresh asks for a new Snapshot now.
type Refresh struct{}

// Quit asks to end the program.
type Quit struct{}

func (Decide) action()       {}
func (OpenAudit) action()    {}
func (FollowOutput) action() {}
func (StopFollow) action()   {}
func (Refresh) action()      {}
func (Quit) action()         {}

// view is what the screen shows.
type view int

const (
	viewList    view = iota // reviews, sessions, commands
	viewConfirm             // the list, with a verdict's reason being typed
	viewAudit               // a session's audit, scrollable
	viewOutput              // a command's output, followed
	viewHelp                // the keys
)

// rowKind is the kind of a selectable row of the list.
type rowKind int

const (
	rowReview rowKind = iota
	rowSession
	rowCommand
)

// row is one selectable row of the list: the index of its item in the
// snapshot's slice of its kind.
type row struct {
	kind rowKind
	i    int
}

// Model is the state of `logbook top` and its rules: which view shows,
// the selected row, a verdict being confirmed, the pager's text. It does
// no I/O and reads no clock: snapshots, audit text and output arrive
// through its Set and Add methods, keys through Key (KeyAt, with the
// time each came), which returns the Action to carry out; View draws it
// as text for a terminal of the size SetSize gave. The zero Model is not ready: use New. Not safe for
// concurrent use.
type Model struct {
	snap    Snapshot
	now     time.Time
	loaded  bool
	err     string // the last refresh's error, shown under the header
	status  string // the last action's outcome
	rows    []row
	cursor  int
	view    view
	prev    view // the view help returns to
	width   int
	height  int
	short   map[string]string // session id → its short form (shortIDs)
	shortW  int               // the widest short form, in columns
	lastKey time.Time         // when the key before came (KeyAt; zero: unknown)
	burst   bool              // the key taken came within burstGap of the one before
	confirm struct {
		verdict string
		review  gate.PendingRow
		reason  []rune
		// gone: the review was decided while the reason was typed. The
		// prompt stays until esc, taking the keys typed ahead, so that
		// none of them acts on the list (answering another review).
		gone bool
	}
	pager struct {
		title  string
		lines  []string
		top    int  // first line shown
		stick  bool // keep the last line in sight as lines come
		ended  string
		audit  string // the audit's text, safe, wrapped anew at each width
		target string // the session or command shown
		pend   []byte // output held back: an incomplete sequence or line
		part   string // the last, unterminated line of output
	}
}

// New returns a Model with nothing loaded, drawing for a terminal of
// 80×24 until SetSize says otherwise.
func New() *Model { return &Model{width: 80, height: 24} }

// SetSize sets the terminal's size in columns and rows.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = max(width, 20), max(height, 5)
	if m.view == viewAudit && m.pager.audit != "" {
		m.wrapAudit()
	}
	m.clampPager()
}

// SetSnapshot shows s, read at now (the clock phase ages and review
// budgets are measured by). The selected row stays on the same review,
// session or command when s still has it. err, when not nil, is a failed
// refresh: the last snapshot stays, and the error shows under the header.
func (m *Model) SetSnapshot(s Snapshot, now time.Time, err error) {
	m.now = now
	if err != nil {
		m.err = "refresh failed: " + err.Error()
		return
	}
	m.err = ""
	kind, id, had := m.selected()
	m.snap, m.loaded = s, true
	m.shortIDs(s)
	m.rows = m.rows[:0]
	for i := range s.Reviews {
		m.rows = append(m.rows, row{rowReview, i})
	}
	for _, i := range m.sessionOrder() {
		m.rows = append(m.rows, row{rowSession, i})
	}
	for i := range s.Commands {
		m.rows = append(m.rows, row{rowCommand, i})
	}
	m.cursor = min(m.cursor, max(len(m.rows)-1, 0))
	if had {
		for j := range m.rows {
			if k, rid := m.rowID(m.rows[j]); k == kind && rid == id {
				m.cursor = j
				break
			}
		}
	}
	if m.view == viewConfirm && !m.confirm.gone && !m.reviewOpen(m.confirm.review) {
		m.confirm.gone = true
		m.status = "review " + term.Field(m.confirm.review.ID) + " was decided meanwhile: nothing typed is sent; esc to go back"
	}
}

// shortIDs sets the short form of each session id s names (its
// sessions', its reviews' and its commands' sessions), as `logbook
// sessions` shortens them (term.ShortIDs, 8 characters at least), and
// the width of the widest.
func (m *Model) shortIDs(s Snapshot) {
	seen := map[string]bool{}
	var ids []string
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, x := range s.Sessions {
		add(x.ID)
	}
	for _, r := range s.Reviews {
		add(r.Session)
	}
	for _, c := range s.Commands {
		add(c.Session)
	}
	short := term.ShortIDs(ids, 8)
	m.short, m.shortW = make(map[string]string, len(ids)), 8
	for i, id := range ids {
		m.short[id] = term.Field(short[i])
		m.shortW = max(m.shortW, term.DisplayWidth(m.short[id]))
	}
}

// sessionID is session id's short form (shortIDs).
func (m *Model) sessionID(id string) string {
	if s, ok := m.short[id]; ok {
		return s
	}
	return prefix(term.Field(id), 8)
}

// SetStatus shows msg, the outcome of the last action (it may quote the
// server's text), escaped on the bottom line.
func (m *Model) SetStatus(msg string) { m.status = term.Field(msg) }

// SetAudit shows the audit text of session sess (text as the audit verb
// writes it; escaped here), or err when it could not be read. It is
// dropped when the audit view was left or shows another session.
func (m *Model) SetAudit(sess, text string, err error) {
	if m.view != viewAudit || m.pager.target != sess {
		return
	}
	if err != nil {
		m.pager.lines = []string{"audit not read: " + term.Field(err.Error())}
		return
	}
	m.pager.audit = term.Safe(text)
	if m.pager.audit == "" {
		m.pager.audit = "no events\n"
	}
	m.wrapAudit()
	m.clampPager()
}

// wrapAudit lays the audit's text out in lines of the terminal's width:
// a long line goes on indented (term.Wrap) rather than being cut.
func (m *Model) wrapAudit() {
	text := m.pager.audit
	if m.width >= 40 {
		text = term.Wrap(text, m.width)
	}
	m.pager.lines = m.pager.lines[:0]
	for line := range strings.Lines(text) {
		m.pager.lines = append(m.pager.lines, clean(strings.TrimRight(line, "\r\n")))
	}
}

// AddOutput appends data, the next bytes of command cmd's output, to the
// output view (escape sequences removed, controls shown escaped, as
// term.Sanitize does). It is dropped when the view was left or follows
// another command.
func (m *Model) AddOutput(cmd string, data []byte) {
	if m.view != viewOutput || m.pager.target != cmd {
		return
	}
	src := append(m.pager.pend, data...)
	out, rest := term.Sanitize(nil, src, false)
	m.pager.pend = append([]byte(nil), rest...)
	m.addText(string(out))
}

// addText appends sanitized output text to the pager's lines.
func (m *Model) addText(s string) {
	if s == "" {
		return
	}
	if len(m.pager.lines) > 0 && m.pager.part != "" {
		m.pager.lines = m.pager.lines[:len(m.pager.lines)-1]
	}
	s = m.pager.part + s
	parts := strings.Split(s, "\n")
	m.pager.part = parts[len(parts)-1]
	for _, p := range parts[:len(parts)-1] {
		m.pager.lines = append(m.pager.lines, clean(strings.TrimSuffix(p, "\r")))
	}
	if m.pager.part != "" {
		m.pager.lines = append(m.pager.lines, clean(m.pager.part))
	}
	if len(m.pager.lines) > maxPagerLines {
		drop := len(m.pager.lines) - maxPagerLines
		m.pager.lines = slices.Delete(m.pager.lines, 0, drop)
		m.pager.top = max(m.pager.top-drop, 0)
	}
	m.clampPager()
}

// maxPagerLines is the most lines of output the output view keeps: the
// oldest go first.
const maxPagerLines = 10000

// OutputEnded says that following command cmd's output ended: status
// says how the command ended (term.CommandStatus), or err why the
// following stopped.
func (m *Model) OutputEnded(cmd, status string, err error) {
	if m.view != viewOutput || m.pager.target != cmd {
		return
	}
	if len(m.pager.pend) > 0 {
		out, _ := term.Sanitize(nil, m.pager.pend, true)
		m.pager.pend = nil
		m.addText(string(out))
	}
	if err != nil {
		m.pager.ended = "output not followed: " + term.Field(err.Error())
		return
	}
	m.pager.ended = "command " + term.Field(status)
}

// clean returns one line of sanitized text with its tabs expanded to
// eight columns and what escaping left as control text kept.
func clean(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		if r == '\t' {
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col += term.RuneWidth(r)
	}
	return b.String()
}

// Key applies key k and returns what the program is to do.
func (m *Model) Key(k tea.KeyPressMsg) Action {
	return m.KeyAt(k, time.Time{})
}

// burstGap is the least time a person's keys come apart: keys closer
// than it came in one read of the terminal, as the text of a paste the
// terminal did not bracket does (a person types a key in 50 ms at the
// fastest; one read's keys come microseconds apart).
const burstGap = 10 * time.Millisecond

// KeyAt is Key for a key that came at at (the zero time: unknown). An
// enter that would send a verdict and came within burstGap of the key
// before it is a line break of pasted text, not the person's enter: it
// sends nothing, and the status says to press enter again, so that text
// pasted on a terminal that does not bracket pastes ("a", a reason, a
// line break) never answers a review by itself.
func (m *Model) KeyAt(k tea.KeyPressMsg, at time.Time) Action {
	m.burst = !at.IsZero() && !m.lastKey.IsZero() && at.Sub(m.lastKey) < burstGap
	m.lastKey = at
	if k.String() == "ctrl+c" {
		return Quit{}
	}
	switch m.view {
	case viewHelp:
		m.view = m.prev
		return nil
	case viewConfirm:
		return m.confirmKey(k)
	case viewAudit, viewOutput:
		return m.pagerKey(k)
	}
	switch k.String() {
	case "q":
		return Quit{}
	case "?":
		m.prev, m.view = m.view, viewHelp
	case "up", "k":
		m.cursor = max(m.cursor-1, 0)
	case "down", "j":
		m.cursor = min(m.cursor+1, max(len(m.rows)-1, 0))
	case "home", "g":
		m.cursor = 0
	case "end", "G":
		m.cursor = max(len(m.rows)-1, 0)
	case "pgup":
		m.cursor = max(m.cursor-m.listRows(), 0)
	case "pgdown":
		m.cursor = min(m.cursor+m.listRows(), max(len(m.rows)-1, 0))
	case "r":
		return Refresh{}
	case "a", "d":
		r, ok := m.selectedReview()
		if !ok {
			m.status = "select a pending review first (a allows it, d denies it)"
			return nil
		}
		m.view = viewConfirm
		m.confirm.review, m.confirm.reason, m.confirm.gone = r, nil, false
		m.confirm.verdict = events.VerdictAllow
		if k.String() == "d" {
			m.confirm.verdict = events.VerdictDeny
		}
		m.status = ""
	case "enter":
		sess := m.selectedSession()
		if sess == "" {
			m.status = "nothing selected"
			return nil
		}
		m.openPager(viewAudit, sess, "audit of session "+term.Field(sess))
		m.pager.lines = []string{"reading…"}
		return OpenAudit{Session: sess}
	case "o":
		r, ok := m.selectedRow()
		if !ok || r.kind != rowCommand {
			m.status = "select an active command first (o follows its output)"
			return nil
		}
		id := m.snap.Commands[r.i].ID
		m.openPager(viewOutput, id, "output of command "+term.Field(id))
		m.pager.stick = true
		return FollowOutput{Command: id}
	}
	return nil
}

// confirmKey takes a key while a verdict's reason is typed: text,
// backspace, enter to send, esc to cancel.
func (m *Model) confirmKey(k tea.KeyPressMsg) Action {
	if m.confirm.gone {
		if k.Code == tea.KeyEscape {
			m.view = viewList
			m.status = ""
		}
		return nil // typed ahead for a review no longer open
	}
	switch k.Code {
	case tea.KeyEscape:
		m.view = viewList
		m.status = "cancelled"
		return nil
	case tea.KeyEnter:
		reason := string(m.confirm.reason)
		if strings.TrimSpace(reason) == "" {
			m.status = "type a reason first (it is recorded with the verdict), or esc to cancel"
			return nil
		}
		if m.burst {
			m.status = "that enter came with a burst of keys, as pasted text does: check the reason, then press enter to send, or esc to cancel"
			return nil
		}
		m.view = viewList
		r := m.confirm.review
		m.status = m.confirm.verdict + " review " + term.Field(r.ID) + "…"
		return Decide{Session: r.Session, Review: r.ID, Verdict: m.confirm.verdict, Reason: reason}
	case tea.KeyBackspace:
		m.status = ""
		if n := len(m.confirm.reason); n > 0 {
			m.confirm.reason = m.confirm.reason[:n-1]
		}
		return nil
	}
	// Text is set for a printable key (space included), empty for one
	// held with ctrl or alt.
	m.typeReason(k.Text, false)
	return nil
}

// Paste types text pasted on the terminal (a bracketed paste) into the
// reason being typed, if one is, its line breaks and tabs kept as
// `logbook review --reason` keeps them; elsewhere it is ignored.
func (m *Model) Paste(text string) {
	if m.view == viewConfirm && !m.confirm.gone {
		text = strings.ReplaceAll(text, "\r\n", "\n")
		m.typeReason(strings.ReplaceAll(text, "\r", "\n"), true)
	}
}

// typeReason appends text's printable characters (with pasted, line
// feeds and tabs too) to the reason typed, up to maxReason bytes; past
// them it says so rather than cutting silently.
func (m *Model) typeReason(text string, pasted bool) {
	if text == "" {
		return
	}
	m.status = ""
	n := len(string(m.confirm.reason))
	for _, r := range text {
		if !(r >= 0x20 && r != 0x7f && (r < 0x80 || r > 0x9f)) && !(pasted && (r == '\n' || r == '\t')) {
			continue
		}
		if n+utf8.RuneLen(r) > maxReason {
			m.status = fmt.Sprintf("the reason is at its limit of %d bytes: the rest is not typed", maxReason)
			return
		}
		m.confirm.reason = append(m.confirm.reason, r)
		n += utf8.RuneLen(r)
	}
}

// maxReason is the most bytes of a reason: the gate's limit, as
// `logbook review --reason` has it.
const maxReason = gate.MaxReason

// pagerKey takes a key in the audit or output view.
func (m *Model) pagerKey(k tea.KeyPressMsg) Action {
	page := max(m.pagerRows()-1, 1)
	switch k.String() {
	case "q", "esc", "left", "h":
		following := m.view == viewOutput
		m.view = viewList
		m.pager.target = ""
		if following {
			return StopFollow{}
		}
	case "?":
		m.prev, m.view = m.view, viewHelp
	case "up", "k":
		m.pager.top--
		m.pager.stick = false
	case "down", "j", "enter":
		m.pager.top++
	case "pgup", "b":
		m.pager.top -= page
		m.pager.stick = false
	case "pgdown", "space", "f":
		m.pager.top += page
	case "home", "g":
		m.pager.top = 0
		m.pager.stick = false
	case "end", "G":
		m.pager.top = len(m.pager.lines)
		m.pager.stick = m.view == viewOutput
	}
	m.clampPager()
	return nil
}

// openPager switches to view v showing target under title.
func (m *Model) openPager(v view, target, title string) {
	m.view = v
	m.pager.title, m.pager.target = title, target
	m.pager.lines, m.pager.top, m.pager.stick = nil, 0, false
	m.pager.ended, m.pager.pend, m.pager.part, m.pager.audit = "", nil, "", ""
	m.status = ""
}

// clampPager keeps the pager's first line within its text, and at the
// end while it sticks there.
func (m *Model) clampPager() {
	last := max(len(m.pager.lines)-m.pagerRows(), 0)
	if m.pager.stick {
		m.pager.top = last
	}
	m.pager.top = min(max(m.pager.top, 0), last)
	if m.pager.top == last && m.view == viewOutput {
		m.pager.stick = true
	}
}

// pagerRows is how many lines of text the pager shows at once: the
// screen less its title and bottom lines.
func (m *Model) pagerRows() int { return max(m.height-3, 1) }

// listRows is how many lines the list shows at once: the screen less the
// header and the bottom lines.
func (m *Model) listRows() int { return max(m.height-5, 1) }

// selectedRow returns the selected row, false when the list is empty.
func (m *Model) selectedRow() (row, bool) {
	if m.cursor < 0 || m.cursor >= len(m.rows) {
		return row{}, false
	}
	return m.rows[m.cursor], true
}

// selected returns the kind and id of the selected row.
func (m *Model) selected() (rowKind, string, bool) {
	r, ok := m.selectedRow()
	if !ok {
		return 0, "", false
	}
	k, id := m.rowID(r)
	return k, id, true
}

// rowID returns r's kind and the id of its item (a review's session and
// id).
func (m *Model) rowID(r row) (rowKind, string) {
	switch r.kind {
	case rowReview:
		return r.kind, m.snap.Reviews[r.i].Session + "/" + m.snap.Reviews[r.i].ID
	case rowSession:
		return r.kind, m.snap.Sessions[r.i].ID
	}
	return r.kind, m.snap.Commands[r.i].ID
}

// selectedReview returns the selected review, if a review is selected.
func (m *Model) selectedReview() (gate.PendingRow, bool) {
	r, ok := m.selectedRow()
	if !ok || r.kind != rowReview {
		return gate.PendingRow{}, false
	}
	return m.snap.Reviews[r.i], true
}

// selectedSession returns the session of the selected row: the session
// itself, a review's or a command's; "" when nothing is selected.
func (m *Model) selectedSession() string {
	r, ok := m.selectedRow()
	if !ok {
		return ""
	}
	switch r.kind {
	case rowReview:
		return m.snap.Reviews[r.i].Session
	case rowSession:
		return m.snap.Sessions[r.i].ID
	}
	return m.snap.Commands[r.i].Session
}

// reviewOpen reports whether the snapshot still lists review r open.
func (m *Model) reviewOpen(r gate.PendingRow) bool {
	for _, o := range m.snap.Reviews {
		if o.Session == r.Session && o.ID == r.ID {
			return true
		}
	}
	return false
}

// phases are the groups of sessions, in the order they show; a phase not
// named here shows last, under its own name.
var phases = []string{events.PhaseWorking, events.PhaseWaiting, events.PhaseReady, events.PhaseEnded}

// phaseRank returns the place of phase p in phases.
func phaseRank(p string) int {
	if i := slices.Index(phases, p); i >= 0 {
		return i
	}
	return len(phases)
}

// sessionOrder returns the indexes of the snapshot's sessions grouped by
// phase (phases), each group in the snapshot's order.
func (m *Model) sessionOrder() []int {
	idx := make([]int, len(m.snap.Sessions))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		pa, pb := m.snap.Sessions[a].Phase, m.snap.Sessions[b].Phase
		if ra, rb := phaseRank(pa), phaseRank(pb); ra != rb {
			return ra - rb
		}
		return strings.Compare(pa, pb)
	})
	return idx
}

// short returns d as a person reads an age: "42s", "5m07s", "25m",
// "3h", "2d".
func short(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < 10*time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
