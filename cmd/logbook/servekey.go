package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// serveKeyEvery is how often serve looks whether its signing key is
// still live on the log: one get of the last key event each time.
var serveKeyEvery = time.Second

// serveKeySayEvery bounds how often serve says its key is revoked.
const serveKeySayEvery = 30 * time.Second

// serveKey watches the key serve signs with. When the log's key events
// (appended by any process) revoke it, every append serve makes is
// refused before it is sent (natslog.KeyRefusedError); hooks taken on the
// socket wait in the intake journal. When the data dir holds the admin
// key (serve on its own data dir, whose key is made at each start), serve
// makes a new key, registers it and signs with it, and the journal
// drains; otherwise it says, at most every serveKeySayEvery, that its key
// was revoked and what to do.
type serveKey struct {
	dd     dataDir
	stderr io.Writer
	key    *attestation.Key
	// logs sign with key: serve's own and its workers' (set before run).
	logs []*natslog.Log
	// rotate is set when serve may make and register a new key.
	rotate bool
	said   time.Time
}

// run watches until ctx ends.
func (s *serveKey) run(ctx context.Context) {
	t := time.NewTicker(serveKeyEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.check(ctx)
	}
}

// check looks once, and rotates or speaks when the key is refused.
func (s *serveKey) check(ctx context.Context) {
	l := s.logs[0]
	if err := l.CatchUpKeys(ctx); err != nil {
		return // judged again at the next look
	}
	err := l.CheckSigner(s.key.ID)
	var ke *natslog.KeyRefusedError
	if !errors.As(err, &ke) {
		return
	}
	if s.rotate {
		nk, rerr := s.replace(ctx)
		if rerr == nil {
			fmt.Fprintf(s.stderr, "logbook serve: its signing key %s (%s) was revoked at seq %d; signing from now on with the new key %s, registered with the admin key; hooks waiting in %s go in now\n",
				s.key.ID, s.key.Principal, ke.Info.Revoked, nk.ID, s.dd.path(intakeJournal))
			s.key = nk
			return
		}
		err = fmt.Errorf("%w; and a new key could not be registered: %w", err, rerr)
	}
	if !s.said.IsZero() && time.Since(s.said) < serveKeySayEvery {
		return
	}
	s.said = time.Now()
	fix := "register a key for this host's serve (`logbook keys register` with the cluster's admin key) and start serve again"
	if s.rotate {
		fix = "start serve again, which makes and registers a new key"
	}
	fmt.Fprintf(s.stderr, "logbook serve: ITS SIGNING KEY IS REFUSED: %v; every append is refused, nothing is appended; hooks taken wait in %s (none lost): %s (this said at most every %s)\n",
		err, s.dd.path(intakeJournal), fix, serveKeySayEvery)
}

// replace makes a new serve key, registers it with the data dir's admin
// key and makes every watched log sign with it.
func (s *serveKey) replace(ctx context.Context) (*attestation.Key, error) {
	nk, err := attestation.NewKey("serve@"+hostName(), attestation.RoleServe)
	if err != nil {
		return nil, err
	}
	if err := s.dd.startSigning(ctx, s.logs[0], nk, false); err != nil {
		return nil, err
	}
	for _, l := range s.logs[1:] {
		l.SetSigner(nk)
	}
	return nk, nil
}
