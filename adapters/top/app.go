package top

import (
	"context"
	"io"
	"time"

	tea "charm.land/bubbletea/v2"
)

// Source is what `logbook top` reads and acts through: the server's API
// as the other commands reach it (its caller owns the connection). Each
// method may block on the network and is called on a goroutine of its
// own; methods may run concurrently.
type Source interface {
	// Snapshot reads the open reviews, the listed sessions and the
	// active commands.
	Snapshot(ctx context.Context) (Snapshot, error)
	// Decide answers a review on the person's word and returns a line
	// saying what was recorded (who won, when a rival answered first),
	// or the error the server gave (a late answer, a reason refused).
	// The line may quote the log's text: the Model escapes it.
	Decide(ctx context.Context, d Decide) (string, error)
	// Audit returns session sess's audit timeline as text, one event a
	// line, as `logbook audit` prints it.
	Audit(ctx context.Context, sess string) (string, error)
	// Follow calls out with each piece of command cmd's output, in
	// order, from its start until it ends (then it returns how it ended,
	// term.CommandStatus) or ctx ends. out's bytes are the callee's.
	Follow(ctx context.Context, cmd string, out func([]byte)) (string, error)
}

// Options tune Run.
type Options struct {
	// Interval is how often the snapshot is read again; 0: every 2 s.
	Interval time.Duration
	// Changed, when not nil, signals that the log holds new events: the
	// snapshot is read again then too (a closed channel stops the
	// signals, not the interval's reads).
	Changed <-chan struct{}
	// Now is the clock ages and budgets are measured by; nil: time.Now.
	Now func() time.Time
	// AltScreen draws on the terminal's alternate screen, which is
	// left as it was at the end.
	AltScreen bool
}

// Run draws src on the terminal out, reading keys from in, until the
// person quits (q, ctrl+c) or ctx ends; the error is the terminal's.
func Run(ctx context.Context, src Source, in io.Reader, out io.Writer, o Options) error {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &app{m: New(), src: src, o: o}
	a.ctx, a.cancel = context.WithCancel(ctx)
	defer a.cancel()
	a.prog = tea.NewProgram(a, tea.WithContext(a.ctx), tea.WithInput(in), tea.WithOutput(out))
	_, err := a.prog.Run()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// app is the bubbletea model around a Model: it turns the Model's
// actions into calls of the Source and their answers into the Model's
// Set and Add calls.
type app struct {
	m      *Model
	src    Source
	o      Options
	ctx    context.Context
	cancel context.CancelFunc
	prog   *tea.Program

	reading bool // a snapshot is being read
	again   bool // read once more when it is in
	stop    context.CancelFunc
}

// Messages the app's commands send to it.
type (
	snapshotMsg struct {
		s   Snapshot
		err error
	}
	tickMsg    struct{}
	changedMsg struct{}
	decidedMsg struct{ text string }
	auditMsg   struct {
		sess, text string
		err        error
	}
	outputMsg struct {
		cmd  string
		data []byte
	}
	outputEndedMsg struct {
		cmd, status string
		err         error
	}
)

func (a *app) Init() tea.Cmd {
	return tea.Batch(a.read(), a.tick(), a.watch())
}

// read reads a snapshot, unless one is being read (then once more after).
func (a *app) read() tea.Cmd {
	if a.reading {
		a.again = true
		return nil
	}
	a.reading = true
	return func() tea.Msg {
		s, err := a.src.Snapshot(a.ctx)
		return snapshotMsg{s, err}
	}
}

func (a *app) tick() tea.Cmd {
	return tea.Tick(a.o.Interval, func(time.Time) tea.Msg { return tickMsg{} })
}

// watch waits for the next signal of Options.Changed.
func (a *app) watch() tea.Cmd {
	if a.o.Changed == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case _, ok := <-a.o.Changed:
			if ok {
				return changedMsg{}
			}
		case <-a.ctx.Done():
		}
		return nil
	}
}

func (a *app) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		a.m.SetSize(msg.Width, msg.Height)
	case tea.KeyPressMsg:
		return a, a.do(a.m.KeyAt(msg, time.Now()))
	case tea.PasteMsg:
		a.m.Paste(msg.Content)
	case snapshotMsg:
		a.reading = false
		a.m.SetSnapshot(msg.s, a.o.Now(), msg.err)
		if a.again {
			a.again = false
			return a, a.read()
		}
	case tickMsg:
		return a, tea.Batch(a.read(), a.tick())
	case changedMsg:
		return a, tea.Batch(a.read(), a.watch())
	case decidedMsg:
		a.m.SetStatus(msg.text)
		return a, a.read()
	case auditMsg:
		a.m.SetAudit(msg.sess, msg.text, msg.err)
	case outputMsg:
		a.m.AddOutput(msg.cmd, msg.data)
	case outputEndedMsg:
		a.m.OutputEnded(msg.cmd, msg.status, msg.err)
	}
	return a, nil
}

// do carries out act.
func (a *app) do(act Action) tea.Cmd {
	switch act := act.(type) {
	case Quit:
		a.stopFollow()
		return tea.Quit
	case Refresh:
		return a.read()
	case Decide:
		return func() tea.Msg {
			text, err := a.src.Decide(a.ctx, act)
			if err != nil {
				text = act.Verdict + " review failed: " + err.Error()
			}
			return decidedMsg{text}
		}
	case OpenAudit:
		return func() tea.Msg {
			text, err := a.src.Audit(a.ctx, act.Session)
			return auditMsg{act.Session, text, err}
		}
	case FollowOutput:
		a.stopFollow()
		ctx, stop := context.WithCancel(a.ctx)
		a.stop = stop
		return func() tea.Msg {
			status, err := a.src.Follow(ctx, act.Command, func(b []byte) {
				a.prog.Send(outputMsg{act.Command, append([]byte(nil), b...)})
			})
			if ctx.Err() != nil {
				return nil
			}
			return outputEndedMsg{act.Command, status, err}
		}
	case StopFollow:
		a.stopFollow()
	}
	return nil
}

// stopFollow stops following a command's output, if one is followed.
func (a *app) stopFollow() {
	if a.stop != nil {
		a.stop()
		a.stop = nil
	}
}

func (a *app) View() tea.View {
	v := tea.NewView(a.m.View())
	v.AltScreen = a.o.AltScreen
	return v
}
