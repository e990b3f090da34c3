package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// KeyCheckEvery is how often KeyWatch.Run looks whether serve's signing
// key is still live on the log: one get of the last key event each time.
const KeyCheckEvery = time.Second

// KeySayEvery bounds how often KeyWatch says its key is revoked.
const KeySayEvery = 30 * time.Second

// KeyWatch watches the key serve signs with. When the log's key events
// (appended by any process) revoke it, every append serve makes is
// refused before it is sent (natslog.KeyRefusedError); hooks taken on the
// socket wait in the intake journal. With Register set (serve on its own
// data dir, which holds the admin key and makes serve's key at each
// start), it makes a new key, registers it and signs with it, and the
// journal drains; otherwise it says, at most every KeySayEvery, that its
// key was revoked and what to do. Set the fields before Run; Run's
// goroutine is the only one to use them after.
type KeyWatch struct {
	Key *attestation.Key
	// Logs sign with Key: serve's own first, then its workers'.
	Logs []*natslog.Log
	// NewKey makes a new serve key; used with Register.
	NewKey func() (*attestation.Key, error)
	// Register, when not nil, registers key on l with the data dir's
	// admin key and makes l sign with it.
	Register func(ctx context.Context, l *natslog.Log, key *attestation.Key) error
	// Journal is the intake journal's path, named in what is said.
	Journal string
	// Say receives each line to tell, on Run's goroutine.
	Say  func(format string, args ...any)
	said time.Time
}

// Run watches every KeyCheckEvery until ctx ends.
func (s *KeyWatch) Run(ctx context.Context) {
	t := time.NewTicker(KeyCheckEvery)
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
func (s *KeyWatch) check(ctx context.Context) {
	l := s.Logs[0]
	if err := l.CatchUpKeys(ctx); err != nil {
		return // judged again at the next look
	}
	err := l.CheckSigner(s.Key.ID)
	var ke *natslog.KeyRefusedError
	if !errors.As(err, &ke) {
		return
	}
	if s.Register != nil {
		nk, rerr := s.replace(ctx)
		if rerr == nil {
			s.Say("its signing key %s (%s) was revoked at seq %d; signing from now on with the new key %s, registered with the admin key; hooks waiting in %s go in now",
				s.Key.ID, s.Key.Principal, ke.Info.Revoked, nk.ID, s.Journal)
			s.Key = nk
			return
		}
		err = fmt.Errorf("%w; and a new key could not be registered: %w", err, rerr)
	}
	if !s.said.IsZero() && time.Since(s.said) < KeySayEvery {
		return
	}
	s.said = time.Now()
	fix := "register a key for this host's serve (`logbook keys register` with the cluster's admin key) and start serve again"
	if s.Register != nil {
		fix = "start serve again, which makes and registers a new key"
	}
	s.Say("ITS SIGNING KEY IS REFUSED: %v; every append is refused, nothing is appended; hooks taken wait in %s (none lost): %s (this said at most every %s)",
		err, s.Journal, fix, KeySayEvery)
}

// replace makes a new key, registers it and makes every watched log
// sign with it.
func (s *KeyWatch) replace(ctx context.Context) (*attestation.Key, error) {
	nk, err := s.NewKey()
	if err != nil {
		return nil, err
	}
	if err := s.Register(ctx, s.Logs[0], nk); err != nil {
		return nil, err
	}
	for _, l := range s.Logs[1:] {
		l.SetSigner(nk)
	}
	return nk, nil
}
