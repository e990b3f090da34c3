package api

import (
	"context"
	"fmt"

	"github.com/logbook-dev/logbook/adapters/ingest"
)

// WatchRoots follows the transcripts under each of roots (serve --watch)
// as their agents write them, until ctx is done: each directory goes to
// the agent of Config.Agents that owns it (ingest.Owner: a Codex CLI
// sessions tree, ~/.codex/sessions or one holding rollout-*.jsonl files,
// to Codex CLI; any other directory to Claude Code), and each agent's
// directories to one watcher of its ingester. report receives each
// watcher's messages (a file not followed, a line that does not parse),
// from its goroutines. A directory no agent takes is an error naming it,
// before anything starts. When one watcher cannot start, the others are
// stopped and its error returned; otherwise the first error of any, or
// nil.
func (s *Service) WatchRoots(ctx context.Context, roots []string, report func(msg string)) error {
	byAgent := map[string][]string{}
	var order []string // agent names, in the order of their first directory
	for _, d := range roots {
		a, ok := ingest.Owner(s.agents, d)
		if !ok {
			return fmt.Errorf("--watch %s: no agent's directory", d)
		}
		if _, ok := byAgent[a.Name]; !ok {
			order = append(order, a.Name)
		}
		byAgent[a.Name] = append(byAgent[a.Name], d)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(order))
	for _, name := range order {
		f := s.followers[name]
		go func() { errs <- f.Follow(ctx, ingest.FollowConfig{Roots: byAgent[name], Report: report}) }()
	}
	var first error
	for range order {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel() // one watcher could not start: stop the others
		}
	}
	return first
}
