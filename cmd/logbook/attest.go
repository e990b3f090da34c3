package main

import (
	"context"
	"fmt"
	"time"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/datadir"
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

// hostName is this host's name as key events name it (datadir.HostName).
func hostName() string { return datadir.HostName() }

// attestConfig sets cfg's Verifier from the data dir's pin
// (datadir.Dir.AttestConfig).
func (d dataDir) attestConfig(cfg natslog.Config) (natslog.Config, error) {
	return d.dir().AttestConfig(cfg)
}

// startSigning makes l sign with k, registering k first when it is not
// (datadir.Dir.StartSigning).
func (d dataDir) startSigning(ctx context.Context, l *natslog.Log, k *attestation.Key, begin bool) error {
	return d.dir().StartSigning(ctx, l, k, begin)
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

// issueKey adds to c, credentials of role (writer or worker) being
// issued, a fresh signing key for that role registered on the data dir's
// log with its admin key, and the pinned admin key.
func issueKey(ctx context.Context, g *globals, dd dataDir, role natslog.Role, c *creds) error {
	ar := attestation.RoleWriter
	if role == natslog.RoleWorker {
		ar = attestation.RoleWorker
	}
	k, err := attestation.NewKey(fmt.Sprintf("%s@%s (issued %s)", role, hostName(), time.Now().UTC().Format(time.RFC3339)), ar)
	if err != nil {
		return err
	}
	admin, err := dd.dir().AdminKey()
	if err != nil {
		return err
	}
	b, err := openBackend(ctx, &globals{data: string(dd), stdout: g.stdout, stderr: g.stderr, cmdName: "logbook creds issue"})
	if err != nil {
		return err
	}
	defer b.Close()
	if _, err := b.log.RegisterKey(ctx, admin, k, hostName(), time.Now()); err != nil {
		return fmt.Errorf("register the key of the %s credentials: %w", role, err)
	}
	c.Key, c.Admin = k, admin.PublicText()
	return nil
}

// credsSigning sets cfg's Verifier from a --creds file that carries the
// admin key, and returns the file's signing key (datadir.CredsSigning).
func credsSigning(path string, cfg natslog.Config) (natslog.Config, *attestation.Key) {
	return datadir.CredsSigning(path, cfg)
}

// registerDataDirKeys registers the data dir's writer and worker keys
// (datadir.Dir.RegisterKeys).
func (d dataDir) registerDataDirKeys(ctx context.Context, l *natslog.Log) error {
	return d.dir().RegisterKeys(ctx, l)
}

// clusterAttestConfig sets cfg's Verifier on a cluster of one's own from
// the data dir's pin, and reports whether there is one
// (datadir.Dir.ClusterAttestConfig).
func (d dataDir) clusterAttestConfig(cfg natslog.Config) (natslog.Config, bool, error) {
	return d.dir().ClusterAttestConfig(cfg)
}

// clusterKey returns the data dir's signing key for a NATS role on a
// cluster of one's own, and its file name (datadir.Dir.ClusterKey).
func (d dataDir) clusterKey(role natslog.Role) (*attestation.Key, string, error) {
	return d.dir().ClusterKey(role)
}

// joinSigning makes l sign with k once the log has it registered
// (datadir.Dir.JoinSigning).
func (d dataDir) joinSigning(ctx context.Context, l *natslog.Log, name string, k *attestation.Key) error {
	return d.dir().JoinSigning(ctx, l, name, k)
}

// ownAdminKey returns the data dir's admin key when it holds one, else
// nil (datadir.Dir.OwnAdminKey).
func (d dataDir) ownAdminKey() (*attestation.Key, error) { return d.dir().OwnAdminKey() }

// revokeOldServeKeys revokes the keys of earlier starts of serve
// (datadir.Dir.RevokeOldServeKeys).
func (d dataDir) revokeOldServeKeys(ctx context.Context, l *natslog.Log, k *attestation.Key) error {
	return d.dir().RevokeOldServeKeys(ctx, l, k)
}
