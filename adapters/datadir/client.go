package datadir

import (
	"context"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Client is how a command other than serve reaches the log, which
// decides how its reads are judged and what it signs with (Dir.Attest,
// ClientAttest.Sign).
type Client struct {
	// Own is the data dir's own server: no --nats-url and no --creds.
	Own bool
	// Remote is a command that reaches a running server rather than an
	// embedded one it started on the data dir.
	Remote bool
	// CredsPath is the --creds file; "" for none.
	CredsPath string
	// Role is the role the command asks to connect as ("": writer).
	Role natslog.Role
	// ConnRole is the role its connection has, when known ("": unknown;
	// then Role).
	ConnRole natslog.Role
	// Reads is a command that only reads: it never makes the admin key
	// (Dir.Attest).
	Reads bool
}

// ClientAttest is a Client's attestation set-up: the log's config with
// its Verifier, and what the command signs with once the log is open.
type ClientAttest struct {
	Config   natslog.Config // the config to open the log with
	credsKey *attestation.Key
	pinned   bool
}

// Attest sets cfg's Verifier for c: on the data dir's own server from
// its pin (AttestConfig, which makes the admin key when absent; for a
// command that only reads, c.Reads, the pin alone, reads being unjudged
// without one: a read that made a new admin key would judge a log
// signed under the lost one as never signed); with a
// --creds file that carries the admin key, from that file
// (CredsSigning); otherwise, on a cluster of one's own, from the data
// dir's pin of the cluster's admin key when it has one
// (ClusterAttestConfig), reads being unjudged without. Errors are the
// key files'.
func (d Dir) Attest(c Client, cfg natslog.Config) (ClientAttest, error) {
	var a ClientAttest
	var err error
	switch {
	case c.Own && c.Reads:
		cfg, a.pinned, err = d.ClusterAttestConfig(cfg)
	case c.Own:
		cfg, err = d.AttestConfig(cfg)
	case c.CredsPath != "":
		cfg, a.credsKey = CredsSigning(c.CredsPath, cfg)
	}
	if err == nil && !c.Own && a.credsKey == nil {
		cfg, a.pinned, err = d.ClusterAttestConfig(cfg)
	}
	a.Config = cfg
	return a, err
}

// Sign makes l, opened with a.Config, sign what c appends when appends
// is set (a reader, or a command whose only appends are admin-signed,
// signs nothing of its own). A --creds file's key is always used: it was
// registered when the file was issued. On the data dir's own server a
// command that started its embedded server signs as serve would
// (keys/local.key), beginning signing if the log has not; one reaching
// the data dir's serve signs with the key of its role (keys/writer.key,
// keys/worker.key; other roles sign nothing). On a cluster whose admin
// key the data dir pins it signs with the data dir's key of its
// connection's role, which must be registered on the log (JoinSigning).
func (d Dir) Sign(ctx context.Context, c Client, a ClientAttest, l *natslog.Log, appends bool) error {
	if c.Own && appends {
		name, role := "local.key", attestation.RoleServe
		if c.Remote {
			switch c.Role {
			case "", natslog.RoleWriter:
				name, role = "writer.key", attestation.RoleWriter
			case natslog.RoleWorker:
				name, role = "worker.key", attestation.RoleWorker
			default:
				name = ""
			}
		}
		if name != "" {
			k, err := d.PrincipalKey(name, role)
			if err != nil {
				return err
			}
			if err := d.StartSigning(ctx, l, k, !c.Remote); err != nil {
				return err
			}
		}
	}
	if a.credsKey != nil {
		l.SetSigner(a.credsKey)
	}
	if !a.pinned || !appends {
		return nil
	}
	role := c.ConnRole
	if role == "" {
		role = c.Role
	}
	if role == "" {
		role = natslog.RoleWriter
	}
	k, name, err := d.ClusterKey(role)
	if err != nil || k == nil {
		return err
	}
	return d.JoinSigning(ctx, l, name, k)
}
