package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sync"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/projections"
)

// newService returns the API service over b's log and store, with the
// data dir's redaction rules and spool.
func newService(b *backend, store *projections.Store) (*api.Service, error) {
	host, _ := os.Hostname()
	parser, err := b.parser()
	if err != nil {
		return nil, err
	}
	svc, err := api.NewService(api.Config{
		Log: b.log, Reg: b.reg, Store: store, Parser: parser, Host: host,
		SpoolDir: b.dd.path("spool"), PartSize: api.PartSize(b.nc), Private: b.dd.private(),
		Agents: agents(),
	})
	if err == nil {
		svc.AcceptedMissing = func() uint64 { return acceptedMissing(b.dd.dir()) }
	}
	return svc, err
}

// acceptedMissing returns how many sequences missing from the stream a
// start on dd accepted (stream.json's gone, after serve
// --accept-stream-loss); 0 when none or there is no record.
func acceptedMissing(dd datadir.Dir) uint64 {
	rec, have, err := dd.ReadStreamRecord()
	if err != nil || !have {
		return 0
	}
	return rec.Gone
}

// staleSeen keeps the first stale answer a remoteCaller got; its
// callers run on goroutines of their own (top's reads and keys).
type staleSeen struct {
	mu sync.Mutex
	st api.Stale
}

// note keeps st if it is stale and none was before.
func (s *staleSeen) note(st api.Stale) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.IsStale() && !s.st.IsStale() {
		s.st = st
	}
}

// first returns the first stale answer's staleness (zero: none).
func (s *staleSeen) first() api.Stale {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// remoteCaller returns the caller of b's server: with g.staleOK, one
// that takes an answer from a projection as it stands while the log does
// not answer, and notes in stale the first such answer's staleness. It
// may be called from several goroutines at once.
func remoteCaller(g *globals, b *backend, stale *staleSeen) api.Caller {
	return func(ctx context.Context, verb string, req, resp any) error {
		if !g.staleOK {
			return api.Call(ctx, b.nc, b.api, verb, req, resp)
		}
		err := api.Call(api.AllowStale(ctx), b.nc, b.api, verb, req, resp)
		if err == nil {
			stale.note(api.StaleOf(verb, resp))
		}
		return err
	}
}

// withAPI runs fn with a caller that reaches the running server, or, when
// none runs, a service of this process's own on the data dir whose
// projection has first caught up with the log.
func withAPI(ctx context.Context, g *globals, fn func(b *backend, call api.Caller) error) error {
	if sock := g.socketPath(); sock != "" {
		return withSocket(g, sock, fn)
	}
	b, err := openBackend(ctx, g)
	if err != nil {
		return err
	}
	defer b.Close()
	if b.remote {
		var stale staleSeen
		err := fn(b, remoteCaller(g, b, &stale))
		if err == nil {
			staleNote(g, stale.first())
		}
		return err
	}
	store, err := openViews(ctx, g, b)
	if err != nil {
		return err
	}
	defer store.Close()
	svc, err := newService(b, store)
	if err != nil {
		return err
	}
	if _, err := svc.Runner.RunToEnd(ctx); err != nil {
		return fmt.Errorf("catch up projections: %w", err)
	}
	verbs := svc.Handlers()
	maps.Copy(verbs, gateService(b, svc, store, gateFlags{budget: gate.DefaultBudget}, os.Stderr).Handlers())
	return fn(b, api.Local(verbs))
}
