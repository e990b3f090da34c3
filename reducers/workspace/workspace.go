// Package workspace decides and folds one workspace aggregate
// (lb.ev.workspace.<id>, kind events.KindWorkspace): a git worktree of a
// project, its materialization step by step, its name, owner and
// archive.
//
//	initializing → ready | failed
//	initializing | ready | failed → archiving → archived
//
// Reserve opens it; a second Reserve of the same workspace decides
// nothing, so a retried create answers the same workspace and one create
// never yields two. Every materialization step names the runner that
// took it (Reserve's, or a later Resume's); a step of any other runner
// is refused, so after a restart takes a crashed materialization over,
// a straggler of the old one changes nothing. Only an initializing
// workspace takes steps: an archive during setup makes the rest of the
// materialization refused.
//
// Decide and Evolve are pure: time arrives inside commands, nothing reads
// a clock, draws randomness or does I/O.
package workspace

import (
	"fmt"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/events"
)

// Statuses of a workspace.
const (
	StatusInitializing = "initializing"
	StatusReady        = "ready"
	StatusFailed       = "failed"
	StatusArchiving    = "archiving"
	StatusArchived     = "archived"
)

// Cleanup states after an archive.
const (
	CleanupDone   = "done"
	CleanupFailed = "failed"
)

// State is what the reducer knows of one workspace. Its JSON form is the
// workspace's projection row: field names are a stored format.
type State struct {
	ID          string `json:"id"`
	Ver         uint64 `json:"ver"` // 0: never reserved
	Project     string `json:"project"`
	Name        string `json:"name"`
	Key         string `json:"key"`
	Path        string `json:"path"`
	Branch      string `json:"branch"`
	Status      string `json:"status"`
	OwnedBy     string `json:"owned_by,omitempty"`
	NamedBy     string `json:"named_by"`
	Placeholder bool   `json:"placeholder,omitempty"`
	Runner      string `json:"runner,omitempty"`
	// BaseAsked is the --base asked for ("" for the default); BaseRef and
	// BaseCommit are what it resolved to.
	BaseAsked  string   `json:"base_asked,omitempty"`
	BaseRef    string   `json:"base_ref,omitempty"`
	BaseCommit string   `json:"base_commit,omitempty"`
	Fallback   string   `json:"fallback,omitempty"`
	Worktree   bool     `json:"worktree"` // git made the worktree
	SyncDone   bool     `json:"sync_done"`
	Synced     []string `json:"synced,omitempty"`
	Protected  []string `json:"protected,omitempty"`
	SetupRan   int      `json:"setup_ran"` // setup commands recorded
	FailStep   string   `json:"fail_step,omitempty"`
	FailReason string   `json:"fail_reason,omitempty"`
	ArchivedBy string   `json:"archived_by,omitempty"`
	ArchivedAs string   `json:"archived_as,omitempty"` // events.ByChat or events.ByPerson
	Cleanup    string   `json:"cleanup,omitempty"`     // CleanupDone, CleanupFailed or ""
	CleanupErr string   `json:"cleanup_error,omitempty"`

	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	ReadyAt    time.Time `json:"ready_at,omitzero"`
	ArchivedAt time.Time `json:"archived_at,omitzero"`
}

// Init returns the state of a workspace before its first event.
func Init(agg events.Aggregate) State { return State{ID: agg.ID} }

// Exists reports whether the workspace was reserved.
func (s State) Exists() bool { return s.Ver > 0 && s.Status != "" }

// Gone reports whether the workspace is archiving or archived.
func (s State) Gone() bool { return s.Status == StatusArchiving || s.Status == StatusArchived }

// CanWork returns nil when commands and sessions may start in the
// workspace (it is ready), else an error wrapping events.ErrRejected
// that says why.
func (s State) CanWork() error {
	switch s.Status {
	case StatusReady:
		return nil
	case StatusInitializing:
		return fmt.Errorf("%w: workspace %s (%s) is still initializing; wait until it is ready (logbook workspace show %s)", events.ErrRejected, s.Name, s.ID, s.ID)
	case StatusFailed:
		return fmt.Errorf("%w: workspace %s (%s) failed at %s: %s", events.ErrRejected, s.Name, s.ID, s.FailStep, s.FailReason)
	default:
		return fmt.Errorf("%w: workspace %s (%s) is %s", events.ErrRejected, s.Name, s.ID, s.Status)
	}
}

// MayActFor returns nil when actor may archive the workspace or start
// work in it on behalf of another session: a person always (recorded as
// such), a session only when it owns the workspace. The error wraps
// events.ErrRejected.
func (s State) MayActFor(actor, as string) error {
	if as == events.ByPerson {
		return nil
	}
	if s.OwnedBy == "" {
		return fmt.Errorf("%w: workspace %s was made by a person; session %s does not own it", events.ErrRejected, s.ID, actor)
	}
	if s.OwnedBy != actor {
		return fmt.Errorf("%w: workspace %s is owned by session %s, not %s", events.ErrRejected, s.ID, s.OwnedBy, actor)
	}
	return nil
}

// Command is an input to Decide. Each carries its decision time At and
// the Cause its events record.
type Command interface{ command() }

// Reserve opens the workspace (events.WorkspaceReserved's fields).
type Reserve struct {
	Project, Name, Key, Path, Branch, Base string
	OwnedBy, NamedBy                       string
	Placeholder                            bool
	Runner                                 string
	At                                     time.Time
	Cause                                  events.Cause
}

// Resume hands an initializing workspace to Runner (after its runner
// was found gone). Resuming with the current runner decides nothing.
type Resume struct {
	Runner string
	At     time.Time
	Cause  events.Cause
}

// Step records one materialization step of Runner: Event is one of
// events.WorkspaceBaseResolved, WorkspaceWorktreeAdded, WorkspaceSynced,
// WorkspaceSetupRan, WorkspaceReady or WorkspaceFailed, with its Runner
// field equal to Runner.
type Step struct {
	Runner string
	Event  events.Payload
	At     time.Time
	Cause  events.Cause
}

// Rename gives the workspace Name and Branch. NamedBy is events.ByChat
// (Session names itself) or events.ByPerson.
type Rename struct {
	Name, Branch, NamedBy, Session string
	At                             time.Time
	Cause                          events.Cause
}

// Archive starts the archive (archiving). By is the session asking, As
// events.ByChat or events.ByPerson. Archiving a workspace that is
// archiving or archived decides nothing.
type Archive struct {
	By, As string
	At     time.Time
	Cause  events.Cause
}

// FinishArchive records that the archive is complete (archived).
type FinishArchive struct {
	At    time.Time
	Cause events.Cause
}

// Clean records the cleanup's outcome: Err "" for done, else the Step
// that failed and why.
type Clean struct {
	Step, Err string
	At        time.Time
	Cause     events.Cause
}

func (Reserve) command()       {}
func (Resume) command()        {}
func (Step) command()          {}
func (Rename) command()        {}
func (Archive) command()       {}
func (FinishArchive) command() {}
func (Clean) command()         {}

// MaxName is the longest workspace name, in bytes.
const MaxName = 200

// ValidName reports, wrapping events.ErrRejected, a workspace name that
// is not valid UTF-8, is longer than MaxName, or holds a control
// character (C0, DEL, C1: a terminal would act on an escape sequence) or
// a bidirectional override or isolate (U+202A–U+202E, U+2066–U+2069,
// which reorder how the text around them is shown).
func ValidName(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: name %q is not valid UTF-8", events.ErrRejected, name)
	}
	if len(name) > MaxName {
		return fmt.Errorf("%w: name of %d bytes, over the limit of %d", events.ErrRejected, len(name), MaxName)
	}
	for i, r := range name {
		if unicode.IsControl(r) || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			return fmt.Errorf("%w: name %q holds %U at byte %d (no control characters or bidirectional overrides)", events.ErrRejected, name, r, i)
		}
	}
	return nil
}

// Decide returns the events cmd causes in s, or an error wrapping
// events.ErrRejected (events.ErrNotFound for a workspace never reserved)
// that says why cmd is refused. s is not modified.
func Decide(s State, cmd Command) (events.Decision, error) {
	if _, ok := cmd.(Reserve); !ok && !s.Exists() {
		return nil, fmt.Errorf("workspace %s: %w", s.ID, events.ErrNotFound)
	}
	switch c := cmd.(type) {
	case Reserve:
		if s.Exists() {
			if s.Project != c.Project {
				return nil, fmt.Errorf("reserve workspace %s: %w: the id names a workspace of project %s", s.ID, events.ErrRejected, s.Project)
			}
			if s.Gone() {
				return nil, fmt.Errorf("reserve workspace %s: %w: the id names a workspace that is %s", s.ID, events.ErrRejected, s.Status)
			}
			return nil, nil
		}
		if c.Project == "" || c.Key == "" || c.Path == "" || c.Branch == "" || c.Runner == "" {
			return nil, fmt.Errorf("reserve workspace %s: %w: project, key, path, branch and runner are required", s.ID, events.ErrRejected)
		}
		if c.NamedBy != events.ByChat && c.NamedBy != events.ByPerson {
			return nil, fmt.Errorf("reserve workspace %s: %w: named by %q", s.ID, events.ErrRejected, c.NamedBy)
		}
		if err := ValidName(c.Name); err != nil {
			return nil, fmt.Errorf("reserve workspace %s: %w", s.ID, err)
		}
		return events.One(events.WorkspaceReserved{
			Project: c.Project, Name: c.Name, Key: c.Key, Path: c.Path, Branch: c.Branch, Base: c.Base,
			OwnedBy: c.OwnedBy, NamedBy: c.NamedBy, Placeholder: c.Placeholder, Runner: c.Runner,
		}, c.At, c.Cause), nil
	case Resume:
		if s.Status != StatusInitializing {
			return nil, fmt.Errorf("resume workspace %s: %w: it is %s", s.ID, events.ErrRejected, s.Status)
		}
		if s.Runner == c.Runner {
			return nil, nil
		}
		return events.One(events.WorkspaceResumed{Runner: c.Runner, Was: s.Runner}, c.At, c.Cause), nil
	case Step:
		if s.Status != StatusInitializing {
			return nil, fmt.Errorf("workspace %s: %w: it is %s, no longer initializing", s.ID, events.ErrRejected, s.Status)
		}
		if c.Runner != s.Runner {
			return nil, fmt.Errorf("workspace %s: %w: runner %s was taken over by %s", s.ID, events.ErrRejected, c.Runner, s.Runner)
		}
		if runnerOf(c.Event) != c.Runner {
			return nil, fmt.Errorf("workspace %s: %w: step %T of runner %q", s.ID, events.ErrRejected, c.Event, runnerOf(c.Event))
		}
		return events.One(c.Event, c.At, c.Cause), nil
	case Rename:
		if s.Gone() {
			return nil, fmt.Errorf("rename workspace %s: %w: it is %s", s.ID, events.ErrRejected, s.Status)
		}
		if c.Name == "" || c.Branch == "" {
			return nil, fmt.Errorf("rename workspace %s: %w: empty name or branch", s.ID, events.ErrRejected)
		}
		if err := ValidName(c.Name); err != nil {
			return nil, fmt.Errorf("rename workspace %s: %w", s.ID, err)
		}
		if c.NamedBy == events.ByChat && !s.Placeholder {
			return nil, nil // a session names only a placeholder; a person's name stays
		}
		if c.Name == s.Name && c.Branch == s.Branch && c.NamedBy == s.NamedBy && !s.Placeholder {
			return nil, nil
		}
		return events.One(events.WorkspaceRenamed{Name: c.Name, Branch: c.Branch, NamedBy: c.NamedBy, Session: c.Session}, c.At, c.Cause), nil
	case Archive:
		if s.Gone() {
			return nil, nil
		}
		if err := s.MayActFor(c.By, c.As); err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
		by := c.By
		if c.As == events.ByPerson {
			by = ""
		}
		return events.One(events.WorkspaceArchiving{By: by, ByKind: c.As}, c.At, c.Cause), nil
	case FinishArchive:
		if s.Status == StatusArchived {
			return nil, nil
		}
		if s.Status != StatusArchiving {
			return nil, fmt.Errorf("finish archive of workspace %s: %w: it is %s", s.ID, events.ErrRejected, s.Status)
		}
		return events.One(events.WorkspaceArchived{}, c.At, c.Cause), nil
	case Clean:
		if s.Status != StatusArchived {
			return nil, fmt.Errorf("clean workspace %s: %w: it is %s", s.ID, events.ErrRejected, s.Status)
		}
		if c.Err == "" {
			if s.Cleanup == CleanupDone {
				return nil, nil
			}
			return events.One(events.WorkspaceCleaned{}, c.At, c.Cause), nil
		}
		return events.One(events.WorkspaceCleanupFailed{Step: c.Step, Reason: c.Err}, c.At, c.Cause), nil
	default:
		return nil, fmt.Errorf("%w: unknown workspace command %T", events.ErrRejected, cmd)
	}
}

// runnerOf returns the runner a materialization step names, or "" for a
// payload that is not a step.
func runnerOf(p events.Payload) string {
	switch d := p.(type) {
	case events.WorkspaceBaseResolved:
		return d.Runner
	case events.WorkspaceWorktreeAdded:
		return d.Runner
	case events.WorkspaceSynced:
		return d.Runner
	case events.WorkspaceSetupRan:
		return d.Runner
	case events.WorkspaceReady:
		return d.Runner
	case events.WorkspaceFailed:
		return d.Runner
	}
	return ""
}

// Evolve returns s after e. It only applies facts and never fails;
// events of other aggregates leave s unchanged and slices in the result
// are fresh.
func Evolve(s State, e events.Envelope) State {
	if e.Agg.Kind != events.KindWorkspace {
		return s
	}
	s.ID, s.Ver, s.UpdatedAt = e.Agg.ID, e.Ver, e.At
	switch d := e.Data.(type) {
	case events.WorkspaceReserved:
		s.Project, s.Name, s.Key, s.Path, s.Branch = d.Project, d.Name, d.Key, d.Path, d.Branch
		s.BaseAsked, s.OwnedBy, s.NamedBy, s.Placeholder, s.Runner = d.Base, d.OwnedBy, d.NamedBy, d.Placeholder, d.Runner
		s.Status, s.CreatedAt = StatusInitializing, e.At
	case events.WorkspaceResumed:
		s.Runner = d.Runner
	case events.WorkspaceBaseResolved:
		s.BaseRef, s.BaseCommit, s.Fallback = d.Ref, d.Commit, d.Fallback
	case events.WorkspaceWorktreeAdded:
		s.Worktree = true
	case events.WorkspaceSynced:
		s.SyncDone, s.Synced, s.Protected = true, slices.Clone(d.Files), slices.Clone(d.Protected)
	case events.WorkspaceSetupRan:
		s.SetupRan = d.Index + 1
	case events.WorkspaceReady:
		s.Status, s.ReadyAt = StatusReady, e.At
	case events.WorkspaceFailed:
		s.Status, s.FailStep, s.FailReason = StatusFailed, d.Step, d.Reason
	case events.WorkspaceRenamed:
		s.Name, s.Branch, s.NamedBy, s.Placeholder = d.Name, d.Branch, d.NamedBy, false
	case events.WorkspaceArchiving:
		s.Status, s.ArchivedBy, s.ArchivedAs = StatusArchiving, d.By, d.ByKind
	case events.WorkspaceArchived:
		s.Status, s.ArchivedAt = StatusArchived, e.At
	case events.WorkspaceCleaned:
		s.Cleanup, s.CleanupErr = CleanupDone, ""
	case events.WorkspaceCleanupFailed:
		s.Cleanup, s.CleanupErr = CleanupFailed, d.Step+": "+d.Reason
	}
	return s
}
