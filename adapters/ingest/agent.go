package ingest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// Agent describes one coding agent to the command line and the server:
// its import verb and help, the folders it writes to, how to tell its
// folders from another agent's, and how to open its ingester for an
// import and for following its files. An agent's package exports its
// Agent (claude.Descriptor, codex.Descriptor); cmd/logbook lists them
// once and builds `logbook import <Verb>` and serve --watch from that
// list. An Agent holds no state and is safe for concurrent use.
type Agent struct {
	// Name is the agent's name as its ingester's actor and its
	// observations (events.Meta.Agent) carry it: "claude-code", "codex".
	// It is unique among the agents listed.
	Name string
	// Verb names its import verb, `logbook import <Verb>`, and its
	// package's folder, adapters/<Verb>: "claude", "codex".
	Verb string
	// Short and Long are the import verb's help.
	Short, Long string
	// Workers says what the verb's --workers counts; File names one of
	// the agent's files in --as-new's help ("transcript", "rollout").
	Workers, File string
	// Roots are the folders the agent writes its files to, relative to
	// the home directory (".pilot/sessions"); RootsEnv, if not "", names
	// the environment variable that replaces them (DefaultRoots).
	Roots    []string
	RootsEnv string
	// DirEnv, if not "", names the environment variable that moves the
	// agent's own folder, the first element of each of Roots, elsewhere
	// (CLAUDE_CONFIG_DIR for ".claude", CODEX_HOME for ".codex").
	DirEnv string
	// PathOptional lets the import verb run with no PATH, importing
	// DefaultRoots; otherwise it takes at least one PATH.
	PathOptional bool
	// Owns reports whether dir, a folder serve --watch names, holds this
	// agent's files rather than another's. Nil: the agent takes any
	// folder no other agent owns (Claude Code's); at most one listed
	// agent has no Owns (Owner).
	Owns func(dir string) bool
	// LineType is the event type of the agent's line observations
	// ("obs.claude.line"): what an import appends, each with the session
	// decisions it causes.
	LineType string
	// Import is the agent's import (NewImport).
	Import Import
	// Open opens the agent's ingester to follow its files (serve
	// --watch). Its errors are the ingester's constructor's.
	Open func(Env) (Follower, error)
}

// DefaultRoots returns where a's files are when no folder is named:
// the value of a.RootsEnv when it is set and not empty (folders
// separated by ':', empty ones dropped), else a.Roots under the value of
// a.DirEnv when that is set and not empty (each root's first element
// replaced by it), else a.Roots under home. It returns nil when a has
// no roots, or home is "" and the variables unset. getenv is os.Getenv
// in the binary.
func (a Agent) DefaultRoots(getenv func(string) string, home string) []string {
	if a.RootsEnv != "" {
		if v := getenv(a.RootsEnv); v != "" {
			var out []string
			for _, d := range strings.Split(v, ":") {
				if d != "" {
					out = append(out, d)
				}
			}
			return out
		}
	}
	if a.DirEnv != "" {
		if v := getenv(a.DirEnv); v != "" {
			var out []string
			for _, r := range a.Roots {
				_, rest, _ := strings.Cut(filepath.ToSlash(r), "/")
				out = append(out, filepath.Join(v, rest))
			}
			return out
		}
	}
	if home == "" {
		return nil
	}
	var out []string
	for _, r := range a.Roots {
		out = append(out, filepath.Join(home, r))
	}
	return out
}

// Owner returns the agent among agents whose files dir holds: the first
// whose Owns says so, else the one without Owns (which takes any
// folder). It returns false when none does.
func Owner(agents []Agent, dir string) (Agent, bool) {
	var any Agent
	found := false
	for _, a := range agents {
		if a.Owns == nil {
			if !found {
				any, found = a, true
			}
			continue
		}
		if a.Owns(dir) {
			return a, true
		}
	}
	return any, found
}

// Env is what an agent's ingester is opened with, alike for every agent.
type Env struct {
	Log events.Log
	Reg *events.Registry
	// Redaction is the data dir's redaction rules and cap on
	// events.Observation.Raw, which every agent's parser takes over so
	// that all observations are redacted alike. Nil: the built-in rules
	// and cap (ParserConfig{}).
	Redaction Redaction
	Host      string
	// Private lists directories (the data dir) whose files are never
	// read as transcripts (Config.Private).
	Private []string
}

// ImportEnv is what an import opens its agent's ingester with: Env and
// the import verb's flags, and what the data dir keeps for imports.
type ImportEnv struct {
	Env
	// Workers is --workers, at least 1; SkipInvalid and AsNew are
	// --skip-invalid and --as-new (Config.SkipInvalid, Config.AsNew).
	Workers            int
	SkipInvalid, AsNew bool
	// IndexPath is the file of the data dir's import index (SkipIndex),
	// "" for none; Incarnation returns the name of the log's stream as
	// it is now, which the index belongs to (OpenSkipIndex).
	IndexPath   string
	Incarnation func(ctx context.Context) (string, error)
	// Warn shows msg as a warning to the person importing (the binary:
	// "warning: <msg>" on stderr). Never nil when Import runs.
	Warn func(msg string)
}

// Follower follows an agent's files as they are written (serve
// --watch). Implementations are safe for concurrent use.
type Follower interface {
	// Follow follows the files under cfg.Roots until ctx is done, with
	// the engine's watcher (Ingester.Watch: its errors).
	Follow(ctx context.Context, cfg FollowConfig) error
}

// FollowConfig configures Follower.Follow; the fields mean what they
// mean in WatchConfig.
type FollowConfig struct {
	Roots    []string
	Await    []string
	Rescan   time.Duration
	Report   func(msg string)
	Imported func(FileResult)
}

// Import is an agent's import with the type of its units hidden, so that
// agents of different units share one list. Make one with NewImport; the
// zero Import imports nothing and its Plan fails.
type Import struct {
	// Noun names one of the agent's files in messages ("transcript").
	Noun string
	plan func(paths, private []string) (*Planned, error)
}

// NewImport returns the Import of format f whose units open imports:
// open starts an import on env and returns its Runner (its Lost is set
// by Planned.Run) and what to do once it ran (nil: nothing); its error
// ends the import before anything is appended.
func NewImport[U any](f Format[U], open func(ctx context.Context, env ImportEnv) (Runner[U], func(), error)) Import {
	return Import{Noun: f.Noun, plan: func(paths, private []string) (*Planned, error) {
		p, err := PlanImport(f, paths, private)
		if err != nil {
			return nil, err
		}
		return &Planned{Warning: p.Warning, run: func(ctx context.Context, env ImportEnv, lost func(error) bool, progress io.Writer) (Summary, error) {
			r, end, err := open(ctx, env)
			if err != nil {
				return Summary{}, err
			}
			r.Lost, r.AsNew = lost, env.AsNew
			sum := p.Run(ctx, r, progress)
			Mark(ctx, MarkImported, "")
			if end != nil {
				end()
			}
			Mark(ctx, MarkSaved, "")
			return sum, nil
		}}, nil
	}}
}

// Plan checks the paths an import names and discovers its units
// (PlanImport: its errors, a *NamedError among them). private lists the
// data dir.
func (i Import) Plan(paths, private []string) (*Planned, error) {
	if i.plan == nil {
		return nil, os.ErrInvalid
	}
	return i.plan(paths, private)
}

// Planned is an import checked and discovered, not yet run (Plan).
type Planned struct {
	// Warning is what to print before the import runs, "" for nothing.
	Warning string
	run     func(ctx context.Context, env ImportEnv, lost func(error) bool, progress io.Writer) (Summary, error)
}

// Run opens the agent's ingester on env and imports the plan's units
// (Plan.Run), showing a counter on a terminal progress; lost says
// whether an error means the log's server went away (nil: never). Its
// error is the opening's: nothing was imported.
func (p *Planned) Run(ctx context.Context, env ImportEnv, lost func(error) bool, progress io.Writer) (Summary, error) {
	return p.run(ctx, env, lost, progress)
}
