package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
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
//
// serve's own key is made at each start and kept only in memory. In
// per-user mode all of these are readable by the user the agent runs as:
// a forgery is detected after the fact (checkpoints, witnesses), not
// prevented.

// keyPath returns the path of the data dir's key file name.
func (d dataDir) keyPath(name string) string { return d.path("keys", name) }

// adminKey returns the data dir's admin key, making it and its pin
// (keys/admin.key, keys/admin.pub) when neither exists. A pin without
// its key, or a key that is not the pin's, is an error naming both.
func (d dataDir) adminKey() (*attestation.Key, error) {
	k, err := attestation.ReadKey(d.keyPath("admin.key"))
	pin, perr := attestation.ReadPin(d.keyPath("admin.pub"))
	switch {
	case err == nil && perr == nil:
		if !k.Public().Equal(pin) {
			return nil, fmt.Errorf("signing keys: %s is not the key pinned in %s", d.keyPath("admin.key"), d.keyPath("admin.pub"))
		}
		return k, nil
	case errors.Is(err, fs.ErrNotExist) && errors.Is(perr, fs.ErrNotExist):
		if err := d.ensure(); err != nil {
			return nil, err
		}
		if k, err = attestation.NewKey("admin@"+hostName(), attestation.RoleAdmin); err != nil {
			return nil, err
		}
		if err := attestation.WriteKey(d.keyPath("admin.key"), k); err != nil {
			return nil, fmt.Errorf("signing keys: %w", err)
		}
		if err := attestation.WritePin(d.keyPath("admin.pub"), k.Public()); err != nil {
			return nil, fmt.Errorf("signing keys: %w", err)
		}
		return k, nil
	case err != nil:
		return nil, fmt.Errorf("signing keys: %w", err)
	default:
		return nil, fmt.Errorf("signing keys: %w", perr)
	}
}

// pinned returns the pinned admin public key, making the admin key when
// the data dir has none yet.
func (d dataDir) pinned() (ed25519.PublicKey, error) {
	pin, err := attestation.ReadPin(d.keyPath("admin.pub"))
	if errors.Is(err, fs.ErrNotExist) {
		k, err := d.adminKey()
		if err != nil {
			return nil, err
		}
		return k.Public(), nil
	}
	return pin, err
}

// principalKey returns the data dir's key file name for role, making it
// (principal user@host) when absent.
func (d dataDir) principalKey(name string, role attestation.Role) (*attestation.Key, error) {
	path := d.keyPath(name)
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
	if k, err = attestation.NewKey(userName()+"@"+hostName(), role); err != nil {
		return nil, err
	}
	if err := attestation.WriteKey(path, k); err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	return k, nil
}

func hostName() string {
	h, _ := os.Hostname()
	if h == "" {
		h = "localhost"
	}
	return h
}

func userName() string {
	for _, v := range []string{"USER", "LOGNAME"} {
		if u := os.Getenv(v); u != "" {
			return u
		}
	}
	return fmt.Sprintf("uid%d", os.Getuid())
}

// attestConfig sets cfg's Verifier from the data dir's pin.
func (d dataDir) attestConfig(cfg natslog.Config) (natslog.Config, error) {
	pin, err := d.pinned()
	if err != nil {
		return cfg, err
	}
	cfg.Verifier = attestation.NewVerifier(pin)
	return cfg, nil
}

// keyRegistered reports whether l holds key.registered for id.
func keyRegistered(ctx context.Context, l *natslog.Log, id string) (bool, error) {
	_, last, err := l.Load(ctx, events.Aggregate{Kind: events.KindKey, ID: id})
	return last > 0, err
}

// startSigning makes l sign with k: it registers k with the data dir's
// admin key unless registered (a worker key must be registered already:
// a worker may not append key events), and, when begin is set (serve, or
// a command on the data dir while no serve runs), appends signing.began
// unless the log has one.
func (d dataDir) startSigning(ctx context.Context, l *natslog.Log, k *attestation.Key, begin bool) error {
	var admin *attestation.Key
	loadAdmin := func() error {
		var err error
		if admin == nil {
			admin, err = d.adminKey()
		}
		return err
	}
	now := time.Now()
	if begin && l.Verifier() != nil {
		began, err := keyRegistered(ctx, l, events.SigningAggregate)
		if err != nil {
			return err
		}
		if !began {
			if err := loadAdmin(); err != nil {
				return err
			}
			if _, err := l.BeginSigning(ctx, admin, hostName(), now); err != nil {
				return fmt.Errorf("begin signing: %w", err)
			}
		}
	}
	ok, err := keyRegistered(ctx, l, k.ID)
	if err != nil {
		return err
	}
	if !ok && k.Role == attestation.RoleWorker {
		// A worker may not append key events; serve registers the
		// data dir's worker key when it starts.
		return fmt.Errorf("signing keys: the worker key %s (%s) is not registered on the log: start serve on this data dir, which registers it", k.ID, d.keyPath("worker.key"))
	}
	if !ok {
		if err := loadAdmin(); err != nil {
			return err
		}
		if _, err := l.RegisterKey(ctx, admin, k, hostName(), now); err != nil {
			return fmt.Errorf("register key %s (%s): %w", k.ID, k.Principal, err)
		}
	}
	l.SetSigner(k)
	return nil
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
	admin, err := dd.adminKey()
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
// admin key, and returns the file's signing key (nil when it has none).
func credsSigning(path string, cfg natslog.Config) (natslog.Config, *attestation.Key) {
	c, err := readCreds(path)
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

// registerDataDirKeys registers the data dir's writer and worker keys
// (making them if absent), so that processes connecting to serve with the
// data dir's credentials of those roles sign with registered keys.
func (d dataDir) registerDataDirKeys(ctx context.Context, l *natslog.Log) error {
	var admin *attestation.Key
	for _, p := range []struct {
		name string
		role attestation.Role
	}{{"writer.key", attestation.RoleWriter}, {"worker.key", attestation.RoleWorker}} {
		k, err := d.principalKey(p.name, p.role)
		if err != nil {
			return err
		}
		ok, err := keyRegistered(ctx, l, k.ID)
		if err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		if admin == nil {
			if admin, err = d.adminKey(); err != nil {
				return err
			}
		}
		if _, err := l.RegisterKey(ctx, admin, k, hostName(), time.Now()); err != nil {
			return fmt.Errorf("register key %s (%s): %w", k.ID, k.Principal, err)
		}
	}
	return nil
}
