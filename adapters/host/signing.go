package host

import (
	"context"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Signing is how a starting serve signs what it appends to its log.
type Signing struct {
	Dir datadir.Dir  // the data dir: its keys/ and, on its own server, its admin key
	Log *natslog.Log // serve's log, made to sign; not closed here
	// Cluster is serve on a cluster of one's own (--nats-url); false is
	// the data dir's own embedded server.
	Cluster bool
	// Reader is serve --role reader: it appends nothing, so signs nothing.
	Reader bool
	// Pinned, on a cluster, says the data dir pins the cluster's admin
	// key (datadir.Dir.ClusterAttestConfig); without it serve signs
	// nothing and reads unjudged.
	Pinned bool
	// Journal is the intake journal's path, named in what the watch says.
	Journal string
	// Say receives each line to tell (format, args), here and from the
	// returned KeyWatch's Run.
	Say func(format string, args ...any)
}

// NewServeKey makes a key for serve to sign with, kept only in memory:
// "serve@<host>", role serve. Its errors are attestation.NewKey's.
func NewServeKey() (*attestation.Key, error) {
	return attestation.NewKey("serve@"+datadir.HostName(), attestation.RoleServe)
}

// Start makes s.Log sign, and returns the KeyWatch to run for its key
// (nil when serve signs nothing) and, on the data dir's own server, the
// key, for the other logs serve opens (nil on a cluster).
//
// On its own server serve signs with a key of its own, made now
// (NewServeKey) and registered with the admin key, a log written before
// signing began being marked where it did; it registers the data dir's
// writer and worker keys and revokes its earlier starts' keys. When the
// data dir holds the admin key, the watch replaces a revoked key. On a
// cluster whose admin key the data dir pins, serve signs with the data
// dir's serve key, which the cluster's admin registered on the log, and
// a revoked one is said, not replaced. What it does is said through
// s.Say. Nothing may have been appended before the caller checked the
// log lost nothing (OpenViews). Errors are the data dir's and the log's.
func (s Signing) Start(ctx context.Context) (*KeyWatch, *attestation.Key, error) {
	dd, l := s.Dir, s.Log
	switch {
	case !s.Cluster && s.Reader:
		return nil, nil, nil
	case !s.Cluster:
		key, err := NewServeKey()
		if err != nil {
			return nil, nil, err
		}
		if err := dd.StartSigning(ctx, l, key, true); err != nil {
			return nil, nil, err
		}
		if err := dd.RegisterKeys(ctx, l); err != nil {
			return nil, nil, err
		}
		if err := dd.RevokeOldServeKeys(ctx, l, key); err != nil {
			return nil, nil, err
		}
		admin, err := dd.OwnAdminKey()
		if err != nil {
			return nil, nil, err
		}
		sk := &KeyWatch{Key: key, Logs: []*natslog.Log{l}, Journal: s.Journal, Say: s.Say}
		if admin != nil {
			sk.NewKey = NewServeKey
			sk.Register = func(ctx context.Context, l *natslog.Log, k *attestation.Key) error {
				return dd.StartSigning(ctx, l, k, false)
			}
		}
		return sk, key, nil
	case !s.Pinned:
		if began, err := l.SignedUnjudged(ctx); err == nil && began > 0 {
			s.Say("WARNING: the log is signed since seq %d but no admin key is pinned in %s: events are appended unsigned and read unjudged, "+
				"folding what every host that pins the key quarantines (unsigned, forged, out-of-role events), so this host's state may differ from theirs; "+
				"pin the log's admin key with `logbook keys pin`", began, dd.KeyPath("admin.pub"))
			return nil, nil, nil
		}
		if s.Reader {
			// A reader appends nothing: only its reads are unjudged.
			s.Say("no admin key pinned in %s: events are read unjudged; pin the cluster's admin key with `logbook keys pin`", dd.KeyPath("admin.pub"))
			return nil, nil, nil
		}
		s.Say("no admin key pinned in %s: events are appended unsigned and read unjudged; pin the cluster's admin key with `logbook keys pin`", dd.KeyPath("admin.pub"))
		return nil, nil, nil
	case s.Reader:
		s.Say("reads judged against the admin key %s", l.Verifier().AdminID())
		return nil, nil, nil
	}
	key, name, err := dd.ClusterKey(natslog.RoleServe)
	if err != nil {
		return nil, nil, err
	}
	if err := dd.JoinSigning(ctx, l, name, key); err != nil {
		return nil, nil, err
	}
	s.Say("signing with key %s (%s); reads judged against the admin key %s", key.ID, key.Principal, l.Verifier().AdminID())
	return &KeyWatch{Key: key, Logs: []*natslog.Log{l}, Journal: s.Journal, Say: s.Say}, nil, nil
}
