package api

import (
	"context"
	"fmt"

	"github.com/logbook-dev/logbook/adapters/ingest"
)

// WatchRoot is one folder serve follows. Agent names the agent whose
// files it holds (ingest.Agent.Name); "" lets ingest.Owner decide. Await
// marks a folder that need not exist yet (an agent's default folder): it
// is followed from when it appears (ingest.WatchConfig.Await).
type WatchRoot struct {
	Dir   string
	Agent string
	Await bool
}

// WatchRoots follows the transcripts under each of roots (serve --watch,
// and the agents' default folders) as their agents write them, until ctx
// is done: each folder goes to its agent (WatchRoot.Agent, else the
// agent of Config.Agents that ingest.Owner finds: a Codex CLI sessions
// tree, ~/.codex/sessions or one holding rollout-*.jsonl files, to Codex
// CLI; any other directory to Claude Code), and each agent's folders to
// one watcher of its ingester. report receives each watcher's messages
// (a file not followed, a line that does not parse, an awaited folder
// that appeared), from its goroutines. A folder no agent takes, or one
// naming an agent not in Config.Agents, is an error naming it, before
// anything starts. When one watcher cannot start, the others are stopped
// and its error returned; otherwise the first error of any, or nil.
func (s *Service) WatchRoots(ctx context.Context, roots []WatchRoot, report func(msg string)) error {
	byAgent := map[string]*ingest.FollowConfig{}
	var order []string // agent names, in the order of their first folder
	for _, r := range roots {
		name := r.Agent
		if name == "" {
			a, ok := ingest.Owner(s.agents, r.Dir)
			if !ok {
				return fmt.Errorf("--watch %s: no agent's directory", r.Dir)
			}
			name = a.Name
		} else if _, ok := s.followers[name]; !ok {
			return fmt.Errorf("watch %s: no agent %q", r.Dir, name)
		}
		fc, ok := byAgent[name]
		if !ok {
			fc = &ingest.FollowConfig{Report: report}
			byAgent[name] = fc
			order = append(order, name)
		}
		if r.Await {
			fc.Await = append(fc.Await, r.Dir)
		} else {
			fc.Roots = append(fc.Roots, r.Dir)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(order))
	for _, name := range order {
		f, cfg := s.followers[name], *byAgent[name]
		go func() { errs <- f.Follow(ctx, cfg) }()
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
