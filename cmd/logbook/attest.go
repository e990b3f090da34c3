package main

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/merkle"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/replay"
)

// The data dir's signing keys (keys/) and signing with them on a log are
// datadir.Dir's; the methods here are the names cmd calls them by.

// keyPath returns the path of the data dir's key file name.
func (d dataDir) keyPath(name string) string { return d.dir().KeyPath(name) }

// principalKey returns the data dir's key file name for role, making it
// when absent (datadir.Dir.PrincipalKey).
func (d dataDir) principalKey(name string, role attestation.Role) (*attestation.Key, error) {
	return d.dir().PrincipalKey(name, role)
}

// unattested returns what l's reads have quarantined so far, for a
// report, those on subjects other than subject ("" for all) left out.
func unattested(l *natslog.Log, subject string) []replay.Unattested {
	if l == nil {
		return nil
	}
	qs, _ := l.Quarantined()
	var out []replay.Unattested
	for _, q := range qs {
		if subject != "" && q.Subject != subject {
			continue
		}
		out = append(out, replay.Unattested{Seq: q.Seq, Subject: q.Subject, Type: q.Type, ID: q.ID, At: q.At, Status: string(q.Verdict.Status),
			Key: q.Verdict.Key, Principal: q.Verdict.Principal, Role: string(q.Verdict.Role), Why: q.Verdict.Why})
	}
	return out
}

// fastPath lets b's log take the fast path of serve's last judgment
// statement (merkle.UseFastPath): signatures of the events it covers are
// not verified one by one, their bytes are checked against its Merkle
// tree instead. Without a statement, a trusted key or the stored hashes
// every signature is verified, as when anything fails here.
func (b *backend) fastPath(ctx context.Context) { b.fastPathKeys(ctx, nil) }

// fastPathKeys is fastPath with the data dir's trusted keys loaded ahead
// by keys (loadKeysAhead of b's data dir) when not nil, else loaded
// here.
func (b *backend) fastPathKeys(ctx context.Context, keys *keysAhead) {
	if b.log == nil || b.nc == nil || b.log.Verifier() == nil {
		return
	}
	js, err := jetstream.New(b.nc)
	if err != nil {
		return
	}
	if keys == nil || keys.dir != b.dd {
		_, _ = merkle.UseFastPath(ctx, b.log, js, string(b.dd))
		return
	}
	<-keys.done
	if keys.err != nil {
		return // as UseFastPath fails on it
	}
	_, _ = merkle.UseFastPathKeys(ctx, b.log, js, string(b.dd), keys.keys)
}

// keysAhead is merkle.LoadKeys of a data dir, loaded on a goroutine of
// its own (loadKeysAhead) while the command connects: done is closed
// when keys and err are set.
type keysAhead struct {
	dir  dataDir
	done chan struct{}
	keys merkle.Keys
	err  error
}

// loadKeysAhead starts loading the trusted keys of the data dir g names
// (resolveDataDir, as openBackend resolves it) and returns at once; nil
// when the data dir does not resolve (openBackend then says why).
func loadKeysAhead(g *globals) *keysAhead {
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return nil
	}
	k := &keysAhead{dir: dd, done: make(chan struct{})}
	go func() {
		defer close(k.done)
		k.keys, k.err = merkle.LoadKeys(string(dd))
	}()
	return k
}
