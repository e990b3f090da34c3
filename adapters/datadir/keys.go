package datadir

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// Signing keys in the data dir (keys/, 0700; each file 0600):
//
//	keys/admin.pub     the pinned admin public key: readers trust key
//	                   events only when this key signed them
//	keys/admin.key     the admin private key, which registers keys
//	keys/local.key     the key of a command that opens the data dir
//	                   directly while no serve runs (role serve)
//	keys/writer.key    the key of the CLI, importers and hook writers
//	                   appending to a running serve's log (role writer)
//	keys/worker.key    the key of a worker process (role worker)
//	keys/serve.key     serve's key on a cluster of one's own (role serve)
//
// serve's own key on the data dir's log is made at each start and kept
// only in memory. On a cluster (--nats-url) every key is a file, which
// the cluster's admin registers on the log (`logbook keys register`),
// and the data dir holds only the admin key's pin. In
// per-user mode all of these are readable by the user the agent runs as:
// a forgery is detected after the fact (checkpoints, witnesses), not
// prevented.

// KeyPath returns the path of the data dir's key file name.
func (d Dir) KeyPath(name string) string { return d.Path("keys", name) }

// AdminKey returns the data dir's admin key, making it and its pin
// (keys/admin.key, keys/admin.pub) when neither exists. A pin without
// its key, or a key that is not the pin's, is an error naming both.
func (d Dir) AdminKey() (*attestation.Key, error) {
	k, err := attestation.ReadKey(d.KeyPath("admin.key"))
	pin, perr := attestation.ReadPin(d.KeyPath("admin.pub"))
	switch {
	case err == nil && perr == nil:
		if !k.Public().Equal(pin) {
			return nil, fmt.Errorf("signing keys: %s is not the key pinned in %s", d.KeyPath("admin.key"), d.KeyPath("admin.pub"))
		}
		return k, nil
	case errors.Is(err, fs.ErrNotExist) && errors.Is(perr, fs.ErrNotExist):
		if err := d.Ensure(); err != nil {
			return nil, err
		}
		if k, err = attestation.NewKey("admin@"+HostName(), attestation.RoleAdmin); err != nil {
			return nil, err
		}
		if err := attestation.WriteKey(d.KeyPath("admin.key"), k); err != nil {
			return nil, fmt.Errorf("signing keys: %w", err)
		}
		if err := attestation.WritePin(d.KeyPath("admin.pub"), k.Public()); err != nil {
			return nil, fmt.Errorf("signing keys: %w", err)
		}
		return k, nil
	case err != nil:
		return nil, fmt.Errorf("signing keys: %w", err)
	default:
		return nil, fmt.Errorf("signing keys: %w", perr)
	}
}

// Pinned returns the pinned admin public key, making the admin key when
// the data dir has none yet.
func (d Dir) Pinned() (ed25519.PublicKey, error) {
	pin, err := attestation.ReadPin(d.KeyPath("admin.pub"))
	if errors.Is(err, fs.ErrNotExist) {
		k, err := d.AdminKey()
		if err != nil {
			return nil, err
		}
		return k.Public(), nil
	}
	return pin, err
}

// PrincipalKey returns the data dir's key file name for role, making it
// (principal user@host) when absent.
func (d Dir) PrincipalKey(name string, role attestation.Role) (*attestation.Key, error) {
	path := d.KeyPath(name)
	k, err := attestation.ReadKey(path)
	if err == nil {
		if k.Role != role {
			return nil, fmt.Errorf("signing keys: %s has role %s, want %s; remove it to make a new one", path, k.Role, role)
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	if k, err = attestation.NewKey(userName()+"@"+HostName(), role); err != nil {
		return nil, err
	}
	if err := attestation.WriteKey(path, k); err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	return k, nil
}

// HostName is this host's name as principals and key events name it:
// os.Hostname, or "localhost" when it has none.
func HostName() string {
	h, _ := os.Hostname()
	if h == "" {
		h = "localhost"
	}
	return h
}

// userName is the user a principal names: $USER, $LOGNAME, else uid<N>.
func userName() string {
	for _, v := range []string{"USER", "LOGNAME"} {
		if u := os.Getenv(v); u != "" {
			return u
		}
	}
	return fmt.Sprintf("uid%d", os.Getuid())
}

// AttestConfig sets cfg's Verifier from the data dir's pin.
func (d Dir) AttestConfig(cfg natslog.Config) (natslog.Config, error) {
	pin, err := d.Pinned()
	if err != nil {
		return cfg, err
	}
	cfg.Verifier = attestation.NewVerifier(pin)
	return cfg, nil
}

// keyRegistered reports whether l holds key.registered for id: with a
// Verifier, one the pinned admin key signed (a forger's does not bind
// the key); without, any.
func keyRegistered(ctx context.Context, l *natslog.Log, id string) (bool, error) {
	if l.Verifier() != nil {
		_, ok, err := l.KeyState(ctx, id)
		return ok, err
	}
	_, last, err := l.Load(ctx, events.Aggregate{Kind: events.KindKey, ID: id})
	return last > 0, err
}

// StartSigning makes l sign with k: it registers k with the data dir's
// admin key unless registered (a worker key must be registered already:
// a worker may not append key events), and, when begin is set (serve, or
// a command on the data dir while no serve runs), appends signing.began
// unless the log has one.
func (d Dir) StartSigning(ctx context.Context, l *natslog.Log, k *attestation.Key, begin bool) error {
	var admin *attestation.Key
	loadAdmin := func() error {
		var err error
		if admin == nil {
			admin, err = d.AdminKey()
		}
		return err
	}
	now := time.Now()
	if begin && l.Verifier() != nil {
		// BeginSigning appends nothing when the admin's signing.began
		// is there; a forged one does not count.
		if err := loadAdmin(); err != nil {
			return err
		}
		if _, err := l.BeginSigning(ctx, admin, HostName(), now); err != nil {
			return fmt.Errorf("begin signing: %w", err)
		}
	}
	ok, err := keyRegistered(ctx, l, k.ID)
	if err != nil {
		return err
	}
	if !ok && k.Role == attestation.RoleWorker {
		// A worker may not append key events; serve registers the
		// data dir's worker key when it starts.
		return fmt.Errorf("signing keys: the worker key %s (%s) is not registered on the log: start serve on this data dir, which registers it", k.ID, d.KeyPath("worker.key"))
	}
	if !ok {
		if err := loadAdmin(); err != nil {
			return err
		}
		if _, err := l.RegisterKey(ctx, admin, k, HostName(), now); err != nil {
			return fmt.Errorf("register key %s (%s): %w", k.ID, k.Principal, err)
		}
	}
	l.SetSigner(k)
	// A key the log revoked signs nothing the readers fold: refused
	// here, before the command appends anything. keyRegistered read
	// the key's own events, its revocation among them.
	if ok {
		if err := l.CheckSigner(k.ID); err != nil {
			return fmt.Errorf("signing keys: %w", err)
		}
	}
	return nil
}

// CredsSigning sets cfg's Verifier from a credentials file (path) that carries the
// admin key, and returns the file's signing key (nil when it has none).
func CredsSigning(path string, cfg natslog.Config) (natslog.Config, *attestation.Key) {
	c, err := ReadCreds(path)
	if err != nil || c.Key == nil || c.Admin == "" {
		return cfg, nil
	}
	pin, err := attestation.ParsePublic(c.Admin)
	if err != nil {
		return cfg, nil
	}
	cfg.Verifier = attestation.NewVerifier(pin)
	return cfg, c.Key
}

// RegisterKeys registers the data dir's writer and worker keys
// (making them if absent), so that processes connecting to serve with the
// data dir's credentials of those roles sign with registered keys. A key
// file whose key the log revoked is replaced by a new key, registered.
func (d Dir) RegisterKeys(ctx context.Context, l *natslog.Log) error {
	var admin *attestation.Key
	for _, p := range []struct {
		name string
		role attestation.Role
	}{{"writer.key", attestation.RoleWriter}, {"worker.key", attestation.RoleWorker}} {
		k, err := d.PrincipalKey(p.name, p.role)
		if err != nil {
			return err
		}
		ok, err := keyRegistered(ctx, l, k.ID)
		if err != nil {
			return err
		}
		if ok {
			if k, err = d.replaceRevoked(ctx, l, p.name, k); err != nil || k == nil {
				return err
			}
		}
		if admin == nil {
			if admin, err = d.AdminKey(); err != nil {
				return err
			}
		}
		if _, err := l.RegisterKey(ctx, admin, k, HostName(), time.Now()); err != nil {
			return fmt.Errorf("register key %s (%s): %w", k.ID, k.Principal, err)
		}
	}
	return nil
}

// replaceRevoked returns nil when the log has not revoked k, the data
// dir's key file name; otherwise it writes a new key of k's principal
// and role in its place, and returns that (not registered yet).
func (d Dir) replaceRevoked(ctx context.Context, l *natslog.Log, name string, k *attestation.Key) (*attestation.Key, error) {
	if l.Verifier() == nil {
		return nil, nil
	}
	info, ok, err := l.KeyState(ctx, k.ID)
	if err != nil || !ok || info.Revoked == 0 {
		return nil, err
	}
	nk, err := attestation.NewKey(k.Principal, k.Role)
	if err != nil {
		return nil, err
	}
	if err := attestation.WriteKey(d.KeyPath(name), nk); err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	return nk, nil
}

// ClusterAttestConfig sets cfg's Verifier for a host of one's own NATS
// cluster (--nats-url, or a --creds file without a key of its own) from
// the data dir's keys/admin.pub, and reports whether it is pinned. A
// host without a pin reads unjudged and appends unsigned, as before
// signing: every host of a cluster pins the same admin key with `logbook
// keys pin`. The admin key is never made here: the cluster's lives where
// `logbook keys admin` made it. A command that only reads the data dir's
// own log takes its pin here too (Attest with Client.Reads, verify's
// reader): a key made by a read would judge a log signed under a lost
// one as never signed.
func (d Dir) ClusterAttestConfig(cfg natslog.Config) (natslog.Config, bool, error) {
	pin, err := attestation.ReadPin(d.KeyPath("admin.pub"))
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, false, nil
	}
	if err != nil {
		return cfg, false, fmt.Errorf("signing keys: %w", err)
	}
	cfg.Verifier = attestation.NewVerifier(pin)
	return cfg, true, nil
}

// ClusterKey returns the data dir's signing key for the NATS role role
// on a cluster of one's own, making it when absent, and its file name:
// serve's credentials sign with keys/serve.key (role serve), a writer's
// with keys/writer.key, a worker's with keys/worker.key. It returns a nil
// key for the roles that append nothing.
func (d Dir) ClusterKey(role natslog.Role) (*attestation.Key, string, error) {
	var name string
	var ar attestation.Role
	switch role {
	case natslog.RoleServe:
		name, ar = "serve.key", attestation.RoleServe
	case natslog.RoleWriter:
		name, ar = "writer.key", attestation.RoleWriter
	case natslog.RoleWorker:
		name, ar = "worker.key", attestation.RoleWorker
	default:
		return nil, "", nil
	}
	k, err := d.PrincipalKey(name, ar)
	return k, name, err
}

// notRegisteredError says that k, the data dir's key in file name, is
// not registered on the cluster's log, and how the admin registers it.
func notRegisteredError(d Dir, name string, k *attestation.Key, why string) error {
	return fmt.Errorf("signing keys: the %s key %s (%s, %s) %s: where the cluster's admin key is, run\n"+
		"  logbook keys register --data ADMIN_DIR --nats-url URL --creds admin.json --role %s --principal '%s' %s\n"+
		"(`logbook keys show --data %s` prints it)", k.Role, k.ID, k.Principal, d.KeyPath(name), why, k.Role, k.Principal, k.PublicText(), d)
}

// JoinSigning makes l, the log on a cluster of one's own read with the
// pinned admin key, sign what it appends with k (the data dir's key
// file name): k must be registered, and not revoked, by key events on
// the log signed by the pinned admin key. Which keys are registered is
// the log's to say, never the data dir's: every host learns them by
// reading. When the data dir holds the admin key itself
// (keys/admin.key, the pin's), it registers k, beginning signing first
// when the log has not; otherwise an unregistered key is an error
// naming the command that registers it.
func (d Dir) JoinSigning(ctx context.Context, l *natslog.Log, name string, k *attestation.Key) error {
	info, ok, err := l.KeyState(ctx, k.ID)
	if err != nil {
		return err
	}
	if ok && info.Revoked != 0 {
		return fmt.Errorf("signing keys: the %s key %s (%s, %s) was revoked at seq %d: remove the file to make a new key, and register that", k.Role, k.ID, k.Principal, d.KeyPath(name), info.Revoked)
	}
	if ok && info.Role != k.Role {
		return fmt.Errorf("signing keys: the key %s (%s) is registered on the log with role %s, not %s", k.ID, d.KeyPath(name), info.Role, k.Role)
	}
	if !ok {
		admin, err := d.OwnAdminKey()
		if err != nil {
			return err
		}
		if admin == nil {
			why := "is not registered on the log"
			if l.Verifier().SigningFrom() == 0 {
				why = "is not registered on the log, which has not begun signing"
			}
			return notRegisteredError(d, name, k, why)
		}
		if err := RegisterOnCluster(ctx, l, admin, k.Public(), k.Principal, k.Role); err != nil {
			return err
		}
	}
	l.SetSigner(k)
	return nil
}

// OwnAdminKey returns the data dir's admin key when it holds one (the
// pin's), or nil when it holds only the pin.
func (d Dir) OwnAdminKey() (*attestation.Key, error) {
	k, err := attestation.ReadKey(d.KeyPath("admin.key"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	pin, err := attestation.ReadPin(d.KeyPath("admin.pub"))
	if err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	if !k.Public().Equal(pin) {
		return nil, fmt.Errorf("signing keys: %s is not the key pinned in %s", d.KeyPath("admin.key"), d.KeyPath("admin.pub"))
	}
	return k, nil
}

// RegisterOnCluster appends, signed by admin, signing.began when the log
// has none, then key.registered for pub (a key registered before
// signing began would bind nothing). A key registered already is left
// as it is.
func RegisterOnCluster(ctx context.Context, l *natslog.Log, admin *attestation.Key, pub ed25519.PublicKey, principal string, role attestation.Role) error {
	now := time.Now()
	if _, err := l.BeginSigning(ctx, admin, HostName(), now); err != nil {
		return fmt.Errorf("begin signing: %w", err)
	}
	if _, err := l.RegisterPublic(ctx, admin, pub, principal, role, HostName(), now); err != nil {
		return fmt.Errorf("register key %s (%s): %w", attestation.KeyID(pub), principal, err)
	}
	return nil
}

// RevokeOldServeKeys revokes, with the data dir's admin key, every key
// the data dir's log registered for an earlier start of serve (role
// serve, principal serve@…) that is still live, now that serve signs
// with k: a key held only in the memory of a serve that has stopped
// signs nothing more, and one that leaked from it must not either.
// What those keys signed before stays attested. keys/local.key, whose
// principal is the user's, is left alone.
func (d Dir) RevokeOldServeKeys(ctx context.Context, l *natslog.Log, k *attestation.Key) error {
	keys, err := l.Keys(ctx)
	if err != nil {
		return err
	}
	var admin *attestation.Key
	for _, old := range keys {
		if old.ID == k.ID || old.Role != attestation.RoleServe || old.Revoked != 0 || !strings.HasPrefix(old.Principal, "serve@") {
			continue
		}
		if admin == nil {
			if admin, err = d.AdminKey(); err != nil {
				return err
			}
		}
		err := l.RevokeKey(ctx, admin, old.ID, "serve started with the key "+k.ID, HostName(), time.Now())
		if err != nil && !errors.Is(err, events.ErrConflict) {
			return fmt.Errorf("revoke the earlier serve key %s: %w", old.ID, err)
		}
	}
	return nil
}

// IssueKey adds to c, credentials of role (writer or worker) being
// issued, a fresh signing key for that role ("<role>@<host> (issued
// <time>)") registered with the data dir's admin key, and the pinned
// admin key's public text. open returns the data dir's log to register
// on, and what closes it, once both keys are in hand; IssueKey closes
// it. Errors are the keys', open's, and "register the key of the <role>
// credentials: …".
func (d Dir) IssueKey(ctx context.Context, role natslog.Role, c *Creds, open func() (*natslog.Log, func() error, error)) error {
	ar := attestation.RoleWriter
	if role == natslog.RoleWorker {
		ar = attestation.RoleWorker
	}
	k, err := attestation.NewKey(fmt.Sprintf("%s@%s (issued %s)", role, HostName(), time.Now().UTC().Format(time.RFC3339)), ar)
	if err != nil {
		return err
	}
	admin, err := d.AdminKey()
	if err != nil {
		return err
	}
	l, closeLog, err := open()
	if err != nil {
		return err
	}
	defer closeLog()
	if _, err := l.RegisterKey(ctx, admin, k, HostName(), time.Now()); err != nil {
		return fmt.Errorf("register the key of the %s credentials: %w", role, err)
	}
	c.Key, c.Admin = k, admin.PublicText()
	return nil
}
