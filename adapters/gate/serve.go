package gate

import (
	"context"
	"path/filepath"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/session"
)

// ServeConfig is what serve's gate is made of beside its API service.
type ServeConfig struct {
	Log      events.Log
	Store    *projections.Store
	DataDir  string        // its PolicyFile is the policy
	Budget   time.Duration // how long a review waits
	Reviewer string        // the reviewer program, run with /bin/sh -c; "": a person answers
	Logf     func(format string, args ...any)
	// Checks is the gate's Checks (require_check); nil denies every
	// call a require_check pattern names.
	Checks func(ctx context.Context, dir string) string
}

// ForService returns the gate serve puts on its API beside svc's verbs:
// sessions decided by svc's executor, the data dir's policy as it is now
// (the one a later faulty edit leaves in force), and what it appends
// redacted by the rules svc's observations are (redact.txt as it is at
// each use). It makes svc record, when the spool delivers its payload,
// a verdict a gated hook gave while no server ran (svc.LocalVerdict).
func ForService(svc *api.Service, cfg ServeConfig) *Service {
	gt := &Gate{
		Sessions: svc.Ing.Sessions(),
		Log:      cfg.Log,
		Policies: &Policies{DataDir: cfg.DataDir},
		Budget:   cfg.Budget,
		Logf:     cfg.Logf,
		Checks:   cfg.Checks,
	}
	if cfg.Reviewer != "" {
		gt.Reviewer = &Reviewer{Command: cfg.Reviewer}
	}
	gt.Policies.Load(filepath.Join(cfg.DataDir, PolicyFile))
	gt.Redactor = svc.Redactor()
	ingest := func(ctx context.Context, data []byte, then ingest.Then) (session.State, error) {
		_, st, err := svc.HookThen(ctx, data, then)
		return st, err
	}
	svc.LocalVerdict = gt.RecordLocal
	return &Service{Gate: gt, Store: cfg.Store, Ingest: ingest, CaughtUp: svc.CaughtUp, Redactor: svc.Redactor()}
}
