package workspace

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/reducers/task"
	"github.com/logbook-dev/logbook/reducers/workspace"
)

// FollowEvery is how often Follow moves delegated tasks along when
// FollowConfig.Every is 0.
const FollowEvery = 2 * time.Second

// Views is what Follow reads of the projection: tasks, workspaces, the
// sessions seen in a workspace (by id) and a session's state. Errors are
// the store's; a session it does not know is an error Follow passes over.
// *projections.Store implements it.
type Views interface {
	Tasks() ([]task.State, error)
	Workspaces() ([]workspace.State, error)
	WorkspaceSessions(id string) ([]string, error)
	Session(id string) (session.State, error)
}

// FollowConfig is what Follow reads and where it says what went wrong.
type FollowConfig struct {
	// Views is the projection; required. Owned by the caller, open while
	// Follow runs.
	Views Views
	// CaughtUp returns nil once Views holds every event of the log
	// appended before the call (api.Service.CaughtUp); required.
	CaughtUp func(context.Context) error
	// Every is the time between rounds; 0 means FollowEvery.
	Every time.Duration
	// Report, when set, is told of what failed, one line without a
	// newline, on Follow's goroutine; nil drops it. Each line starts
	// with its level, "WARN: " for a fault, "INFO: " for news (servelog's
	// markers: see servelog.SayPart), whatever the names it quotes read.
	Report func(msg string)
}

// Follow is serve's workspace actor. Once the projection has caught up
// it finishes what a crash left (Recover: materializations whose runner
// is gone, archives and cleanups) and interrupts the tasks whose session
// neither ended nor was seen since; then, every cfg.Every until ctx is
// done, it moves tasks along from the sessions seen in their workspaces
// and names placeholder workspaces after the first session that names
// itself in them. What fails is reported and tried again next round;
// Follow returns nil when ctx is done.
func (m *Manager) Follow(ctx context.Context, cfg FollowConfig) error {
	every := cfg.Every
	if every == 0 {
		every = FollowEvery
	}
	logf := func(format string, args ...any) {
		if cfg.Report != nil {
			cfg.Report(fmt.Sprintf(format, args...))
		}
	}
	for cfg.CaughtUp(ctx) != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
	v := cfg.Views
	if list, err := v.Workspaces(); err != nil {
		logf("WARN: %v", err)
	} else if n, err := m.Recover(ctx, list); err != nil {
		logf("WARN: recovered %d: %v", n, err)
	} else if n > 0 {
		logf("INFO: recovered %d workspaces a crash left unfinished", n)
	}
	if tasks, err := v.Tasks(); err == nil {
		for _, t := range tasks {
			if t.Status != task.StatusRunning && t.Status != task.StatusResumed {
				continue
			}
			if st, err := v.Session(t.Session); err == nil && st.Phase == events.PhaseEnded {
				continue // its end is decided below
			}
			if _, err := m.Interrupt(ctx, t.ID); err != nil {
				logf("WARN: interrupt task %s: %v", t.ID, err)
			}
		}
	}
	for {
		if err := m.progressTasks(ctx, cfg); err != nil && ctx.Err() == nil {
			logf("WARN: %v", err)
		}
		if err := m.nameWorkspaces(ctx, v); err != nil && ctx.Err() == nil {
			logf("WARN: %v", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// progressTasks moves each task that has not ended along from the
// sessions linked to its workspace, oldest first.
func (m *Manager) progressTasks(ctx context.Context, cfg FollowConfig) error {
	if err := cfg.CaughtUp(ctx); err != nil {
		return err
	}
	v := cfg.Views
	tasks, err := v.Tasks()
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.Ended() {
			continue
		}
		ids, err := v.WorkspaceSessions(t.Workspace)
		if err != nil {
			return err
		}
		var seen []Seen
		for _, id := range ids {
			st, err := v.Session(id)
			if err != nil || id == t.Parent || (t.Session != "" && id != t.Session) {
				continue
			}
			seen = append(seen, Seen{
				Session: id, Ended: st.Phase == events.PhaseEnded, Failed: st.EndReason == "agent_gone",
				Reason: st.EndReason, At: st.UpdatedAt, Ref: fmt.Sprintf("%s-%d", id, st.Ver),
			})
		}
		slices.SortStableFunc(seen, func(a, b Seen) int { return a.At.Compare(b.At) })
		if _, err := m.Progress(ctx, t, seen); err != nil {
			return fmt.Errorf("task %s: %w", t.ID, err)
		}
	}
	return nil
}

// nameWorkspaces gives each ready workspace whose name is a placeholder
// the title of the first session that named itself in it.
func (m *Manager) nameWorkspaces(ctx context.Context, v Views) error {
	list, err := v.Workspaces()
	if err != nil {
		return err
	}
	for _, w := range list {
		if !w.Placeholder || w.Status != workspace.StatusReady {
			continue
		}
		ids, err := v.WorkspaceSessions(w.ID)
		if err != nil {
			return err
		}
		var named []Named
		for _, id := range ids {
			if st, err := v.Session(id); err == nil && st.Title != "" {
				named = append(named, Named{Session: id, Title: st.Title, Started: st.StartedAt})
			}
		}
		if _, err := m.NameFromSessions(ctx, w, named); err != nil {
			return fmt.Errorf("name workspace %s: %w", w.ID, err)
		}
	}
	return nil
}
