package datadir

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/replay"
)

// Existing refuses a data dir that does not exist, is not a directory,
// or is empty: a command that prints or uses what a data dir holds never
// makes one, or keys in one, from a mistyped --data. Its errors name d
// and what to do.
func (d Dir) Existing() error {
	st, err := os.Stat(string(d))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("data dir %s does not exist (a mistyped --data?): start `logbook serve` on it, or make it, first", d)
	}
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("data dir %s is not a directory", d)
	}
	if ents, err := os.ReadDir(string(d)); err == nil && len(ents) == 0 {
		return fmt.Errorf("data dir %s is empty (a mistyped --data?): start `logbook serve` on it, or pin the cluster's admin key there with `logbook keys pin`, first", d)
	}
	return nil
}

// Pin pins pub, a cluster's admin public key, in keys/admin.pub,
// creating the data dir when absent. already is true when that key is
// pinned there already. A pin of another key is an error naming both:
// every key event the host read was judged against it.
func (d Dir) Pin(pub ed25519.PublicKey) (already bool, err error) {
	path := d.KeyPath("admin.pub")
	had, err := attestation.ReadPin(path)
	switch {
	case err == nil && had.Equal(pub):
		return true, nil
	case err == nil:
		return false, fmt.Errorf("%s pins another admin key, %s; every key event this host read was judged against it: remove the file to pin %s", path, attestation.KeyID(had), attestation.KeyID(pub))
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	if err := d.Ensure(); err != nil {
		return false, err
	}
	if err := attestation.WritePin(path, pub); err != nil {
		return false, fmt.Errorf("signing keys: %w", err)
	}
	return false, nil
}

// CheckPrincipal returns nil if principal holds no character
// replay.Escape would show escaped (a control, a separator, a
// bidirectional mark, a byte that is not UTF-8), else an error naming the
// first one and its byte offset: a name every audit line will print.
func CheckPrincipal(principal string) error {
	for i, r := range principal {
		if c := string(r); replay.Escape(c) != c {
			return fmt.Errorf("%q holds the control character %s at byte %d: want printable text", principal, replay.Escape(c), i)
		}
	}
	return nil
}

// Register registers pub on l for principal and role, signed by admin,
// which l's Verifier must pin (RegisterOnCluster: signing begins first
// when it has not), and returns what the log then says of the key.
// already is true when the key was registered already with that
// principal and role: nothing is appended. A key registered already
// otherwise is a *RegisteredError; one whose aggregate holds an event
// admin did not sign, an error naming it.
func (d Dir) Register(ctx context.Context, l *natslog.Log, admin *attestation.Key, pub ed25519.PublicKey, principal string, role attestation.Role) (info attestation.KeyInfo, already bool, err error) {
	if v := l.Verifier(); v == nil || v.AdminID() != admin.ID {
		return info, false, fmt.Errorf("%s does not pin the admin key %s: run `logbook keys pin` first", d.KeyPath("admin.pub"), admin.ID)
	}
	id := attestation.KeyID(pub)
	info, ok, err := l.KeyState(ctx, id)
	if err != nil {
		return info, false, err
	}
	if ok {
		if info.Role != role || info.Principal != principal {
			return info, false, &RegisteredError{ID: id, Info: info}
		}
		return info, true, nil
	}
	if err := RegisterOnCluster(ctx, l, admin, pub, principal, role); err != nil {
		return info, false, err
	}
	if info, ok, err = l.KeyState(ctx, id); err != nil {
		return info, false, err
	}
	if !ok {
		// Something other than the admin's key.registered holds the
		// key's aggregate: nothing was bound.
		return info, false, fmt.Errorf("key %s: the log holds an event for it that the admin key did not sign; nothing registered (see `logbook audit`)", id)
	}
	return info, false, nil
}

// Revoke appends key.revoked for the key id, signed by admin, the key
// l's Verifier must pin (as Register requires): a revocation signed by
// an admin key this data dir does not pin would be judged by every host
// against its own pin, and quarantined where that pin differs. reason,
// host and at are recorded in the event. A key the log never registered
// is an error wrapping events.ErrNotFound; one revoked already, one
// wrapping events.ErrConflict. Nothing is appended on an error.
func (d Dir) Revoke(ctx context.Context, l *natslog.Log, admin *attestation.Key, id, reason, host string, at time.Time) error {
	if v := l.Verifier(); v == nil || v.AdminID() != admin.ID {
		return fmt.Errorf("%s does not pin the admin key %s: run `logbook keys pin` first", d.KeyPath("admin.pub"), admin.ID)
	}
	return l.RevokeKey(ctx, admin, id, reason, host, at)
}

// RegisteredError is Register's refusal of a key registered already for
// another principal or role: a key is registered once.
type RegisteredError struct {
	ID   string              // the key's id
	Info attestation.KeyInfo // its registration
}

// Error names the key and its registration, the principal escaped
// (replay.Escape).
func (e *RegisteredError) Error() string {
	return RegisteredMessage(e.ID, e.Info, replay.Escape(e.Info.Principal))
}

// RegisteredMessage is the message of a RegisteredError, with principal
// as the caller shows it.
func RegisteredMessage(id string, info attestation.KeyInfo, principal string) string {
	return fmt.Sprintf("key %s is registered already, at seq %d, as %s (%s): a key is registered once", id, info.Registered, principal, info.Role)
}

// IsKeyID reports whether s is a key id as attestation.KeyID makes it:
// 16 lowercase hex characters.
func IsKeyID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// HasData reports whether d holds a Logbook store: its log's directory,
// or a running server's serve.json.
func (d Dir) HasData() bool {
	for _, name := range []string{"jetstream", "serve.json"} {
		if _, err := os.Stat(d.Path(name)); err == nil {
			return true
		}
	}
	return false
}

// knownNames are the names Logbook writes or reads in a data dir (the
// packages that own them: natslog, host, api, hooksock, gate, notify,
// merkle, setup, httpapi, usage, redact, ingest); "creds-" is a prefix.
var knownNames = []string{"jetstream", "serve.json", "spool", "views", "lock", "stream.json",
	"creds.json", "creds-", "keys", "redact.txt", "prices.json", "import-index.json",
	"hooks.journal", "hook.sock", "policy.toml", "notify.toml", "checkpoint.key", "merkle",
	"setup.json", "http-tokens.json", "trusted-keys", "witness.json"}

// ForeignError returns an error naming d and up to three of its entries
// when d is an existing directory that holds entries but none Logbook
// knows — a directory of something else (a project, a home) given as a
// data dir by mistake, which Logbook would fill with its own files; nil
// when d does not exist, is empty, or holds any name of Logbook's.
func (d Dir) ForeignError() error {
	f, err := os.Open(string(d))
	if err != nil {
		return nil // missing, or unreadable: what opens it says so
	}
	defer f.Close()
	names, _ := f.Readdirnames(256)
	if len(names) == 0 {
		return nil
	}
	for _, n := range names {
		for _, k := range knownNames {
			if n == k || strings.HasSuffix(k, "-") && strings.HasPrefix(n, k) {
				return nil
			}
		}
	}
	slices.Sort(names)
	shown := names
	if len(shown) > 3 {
		shown = append(shown[:3:3], "…")
	}
	return fmt.Errorf("data dir %s holds files that are not Logbook's (%s) and none that are: give --data (or $LOGBOOK_DATA) a new or empty directory, or one holding Logbook data", d, strings.Join(shown, ", "))
}

// NoDataError says that d has no Logbook data, and what to do: when its
// spool holds hook payloads (hooks ran with no server), that `logbook
// serve` delivers them. When what d holds cannot be seen, it says why
// instead (AccessError): d belongs to another user, or d or a directory
// above it does not let the process look inside. A d that holds what a
// log leaves beside it (views/, stream.json, merkle/) but no log is a log
// gone, not a new data dir; one that holds only files not Logbook's is
// refused as ForeignError says.
func (d Dir) NoDataError() error {
	if err := d.AccessError(); err != nil {
		return err
	}
	if err := d.ForeignError(); err != nil {
		return err
	}
	if err := d.LogGone(); err != nil {
		return err
	}
	switch n := d.spooled(); {
	case n == 1:
		return fmt.Errorf("no Logbook data in %s yet: 1 hook payload waits in its spool; start `logbook serve` to deliver it", d)
	case n > 1:
		return fmt.Errorf("no Logbook data in %s yet: %d hook payloads wait in its spool; start `logbook serve` to deliver them", d, n)
	}
	return fmt.Errorf("no Logbook data in %s: check --data or $LOGBOOK_DATA, or create it with `logbook serve` or `logbook import claude`", d)
}

// LogGone returns an error when d has no log (no jetstream/) but holds
// what a log leaves beside it (stream.json, or views/ or merkle/ with
// something in them): the log was removed or moved, which a read says
// rather than "no data" (FollowerError's, when the projection was made
// from another server's log); nil otherwise. serve still starts a new log
// there, and then refuses it as a stream created again (until
// --accept-stream-loss).
func (d Dir) LogGone() error {
	if _, err := os.Stat(d.Path("jetstream")); err == nil || !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := d.FollowerError(); err != nil {
		return err
	}
	for _, name := range []string{"stream.json", "views", "merkle"} {
		p := d.Path(name)
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			if ents, err := os.ReadDir(p); err != nil || len(ents) == 0 {
				continue // an empty directory (a mount point) left nothing
			}
		}
		return fmt.Errorf("data dir %s has no log (%s is missing) but holds %s, which one left: the log was removed or moved; restore %s from a copy, or run `logbook serve --accept-stream-loss` to start a new log and rebuild the projection from it", d, d.Path("jetstream"), p, d.Path("jetstream"))
	}
	return nil
}

// AccessError returns why the process cannot see what data dir d holds,
// nil when it can or d does not exist: an error wrapping
// hookspool.ErrNotOwner when d belongs to another uid than the
// effective one (naming both), or one wrapping fs.ErrPermission when d,
// or a directory above it, refuses the process a look inside (naming d,
// its mode and what to do).
func (d Dir) AccessError() error {
	st, err := os.Stat(string(d))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("data dir %s: %w: a directory above it does not let you in: check --data or $LOGBOOK_DATA, or use a data dir of your own", d, fs.ErrPermission)
	case err != nil:
		return fmt.Errorf("data dir %s: %w", d, err)
	case !st.IsDir():
		return nil
	}
	if err := hookspool.OwnerError(string(d), st); err != nil {
		return err
	}
	f, err := os.Open(string(d))
	if err == nil {
		_, err = f.Readdirnames(1)
		f.Close()
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("data dir %s: %w: its mode %v does not let you read it: `chmod 700 %s`", d, fs.ErrPermission, st.Mode().Perm(), d)
	}
	return nil
}

// spooled counts the payloads waiting in d's spool: its files named
// <ULID>.json, rejected/ aside; 0 when it cannot be read.
func (d Dir) spooled() int {
	es, err := os.ReadDir(d.Path("spool"))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range es {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") && len(e.Name()) == 26+len(".json") {
			n++
		}
	}
	return n
}
