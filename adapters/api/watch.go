package api

import (
	"context"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/codex"
)

// WatchRoots follows the transcripts under each of roots as they are
// written, until ctx is done: a Codex CLI sessions tree (~/.codex/sessions,
// or one holding rollout-*.jsonl files; codex.IsSessionsDir) as rollouts
// through s.Codex, any other directory as Claude Code transcripts through
// s.Ing; both with the same watcher. report receives each watcher's
// messages (a file not followed, a line that does not parse), from its
// goroutines. When one watcher cannot start, the other is stopped and its
// error returned; otherwise the first error of either, or nil.
func (s *Service) WatchRoots(ctx context.Context, roots []string, report func(msg string)) error {
	var claudeRoots, codexRoots []string
	for _, d := range roots {
		if codex.IsSessionsDir(d) {
			codexRoots = append(codexRoots, d)
		} else {
			claudeRoots = append(claudeRoots, d)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	n := 0
	if len(claudeRoots) > 0 {
		n++
		go func() { errs <- s.Ing.Watch(ctx, claude.WatchConfig{Roots: claudeRoots, Report: report}) }()
	}
	if len(codexRoots) > 0 {
		n++
		go func() { errs <- s.Codex.Watch(ctx, codex.WatchConfig{Roots: codexRoots, Report: report}) }()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel() // one watcher could not start: stop the other
		}
	}
	return first
}
