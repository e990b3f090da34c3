package codex

import (
	"context"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
)

// Descriptor returns Codex CLI as cmd/logbook lists it: `logbook import
// codex`, and the folders serve --watch follows as Codex CLI's
// (IsSessionsDir).
func Descriptor() ingest.Agent {
	return ingest.Agent{
		Name: Agent, Verb: "codex",
		Short: "Import Codex CLI rollouts (files, or directories such as ~/.codex/sessions)",
		Long: `import codex reads Codex CLI rollout files (rollout-*.jsonl under
~/.codex/sessions/YYYY/MM/DD, the envelope format of Codex CLI 0.40 and
later and the legacy format before it) and appends each line, with the
decisions it causes, as one atomic batch to the session's aggregate (the
thread id the rollout's session_meta names). Importing again appends only
lines that are new; a last line still being written waits for the next
import; a line that does not parse stops that file with its path and line
(--skip-invalid records it without signals and goes on). A forked
conversation is a session of its own that names the one it was forked
from. Directories are walked for .jsonl files, each taken if its first
line is a rollout's and listed as skipped if not; files are taken as named.

A rollout that no longer holds what was imported from it (truncated or
rewritten) stops with an error naming it, recorded on its session as
session.transcript_diverged; --as-new then imports the file as it is now
as a new session linked to the old one.`,
		Workers:  "rollouts imported at once",
		File:     "rollout",
		Roots:    []string{".codex/sessions"},
		DirEnv:   "CODEX_HOME",
		Owns:     IsSessionsDir,
		LineType: events.CodexLineObserved{}.EventType(),
		Import:   ingest.NewImport(ImportFormat(), openImport),
		Open: func(env ingest.Env) (ingest.Follower, error) {
			return NewIngester(IngestConfig{Log: env.Log, Reg: env.Reg, Parser: parserOf(env.Redaction), Host: env.Host, Private: env.Private})
		},
	}
}

// parserOf returns a Parser with r's rules and cap, nil (NewParser's
// defaults) when r is nil.
func parserOf(r ingest.Redaction) *Parser {
	if r == nil {
		return nil
	}
	return NewParserFrom(r)
}

// openImport starts a Codex CLI import: one rollout a unit, --workers of
// them at once, the sessions the log holds nothing of found first
// (Ingester.KnowNew) and not read.
func openImport(_ context.Context, env ingest.ImportEnv) (ingest.Runner[string], func(), error) {
	var r ingest.Runner[string]
	ing, err := NewIngester(IngestConfig{Log: env.Log, Reg: env.Reg, Parser: parserOf(env.Redaction), Host: env.Host, SkipInvalid: env.SkipInvalid, AsNew: env.AsNew, Private: env.Private})
	if err != nil {
		return r, nil, err
	}
	r.Begin = ing.KnowNew
	r.Workers = env.Workers
	r.Import = func(ctx context.Context, path string, line func()) ([]ingest.FileResult, error) {
		res, err := ing.ImportFile(ctx, path, func(int) { line() })
		return []ingest.FileResult{res}, err
	}
	return r, nil, nil
}

// Follow follows the rollouts under cfg.Roots (Watch).
func (in *Ingester) Follow(ctx context.Context, cfg ingest.FollowConfig) error {
	return in.Watch(ctx, WatchConfig(cfg))
}
