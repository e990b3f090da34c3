package datadir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/jsonfault"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Creds is what a credentials file holds (creds.json and
// creds-<role>.json in the data dir, and what `creds issue` writes): one
// JSON object,
//
//	{"user": "reader", "password": "…", "role": "reader", "url": "nats://127.0.0.1:4222"}
//
// role is reader, follower, worker, writer, serve or admin (absent:
// writer, as creds.json was before roles); url is optional (where the issuing server listened).
// A follower's also holds follower_id, the one follower it answers for.
// Files are written 0600. ReadCreds reads one, WriteCreds writes one.
type Creds struct {
	User     string `json:"user"`
	Password string `json:"password"`
	Role     string `json:"role,omitempty"`
	URL      string `json:"url,omitempty"`
	// Key, in what `creds issue --role writer|worker` writes, is a
	// signing key of its own registered for the role, and Admin the
	// issuing data dir's pinned admin key (standard base64): a process
	// connecting with the file signs what it appends with Key and
	// judges what it reads against Admin.
	Key   *attestation.Key `json:"key,omitempty"`
	Admin string           `json:"admin,omitempty"`
	// FollowerID, in a follower's credentials, is the API id of the one
	// follower they answer for (12 hex digits, natslog.NewFollowerID):
	// the server lets them subscribe to logbook.ro.<FollowerID>.<verb>
	// and no other follower's subjects, and serve --role reader with
	// them answers there. Other roles have none.
	FollowerID string `json:"follower_id,omitempty"`
}

// CredsFile is the data dir's file of role's credentials.
func (d Dir) CredsFile(role natslog.Role) string {
	if role == natslog.RoleWriter {
		return d.Path("creds.json")
	}
	return d.Path("creds-" + string(role) + ".json")
}

// MaxCredsBytes is the most a credentials file may hold: one is about
// 150 bytes.
const MaxCredsBytes = 64 << 10

// ReadCreds loads a credentials file and checks it has a user, a
// password and a known role. It opens only a regular file (never
// blocking on a FIFO nor reading a device) and reads at most
// MaxCredsBytes. Its errors name path and the cause: no such file
// (wrapping fs.ErrNotExist), not a regular file (wrapping
// hookspool.ErrNotRegular), larger than MaxCredsBytes (wrapping
// hookspool.ErrFileTooLarge), not readable, not JSON or a
// member of the wrong type (with the line and column), a user or
// password missing, a follower_id that is not 12 hex digits or in
// credentials of a role but follower.
func ReadCreds(path string) (Creds, error) {
	var c Creds
	b, err := hookspool.ReadRegular(path, MaxCredsBytes)
	if errors.Is(err, hookspool.ErrNotRegular) || errors.Is(err, hookspool.ErrFileTooLarge) {
		return c, fmt.Errorf("credentials %w", err) // err starts with path
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return c, fmt.Errorf("credentials %s: %w", path, err)
		}
		return c, fmt.Errorf("credentials %s: cannot read it: %w", path, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("credentials %s: %w", path, jsonfault.Fault(b, err, "the credentials"))
	}
	if c.User == "" || c.Password == "" {
		return c, fmt.Errorf("credentials %s: no \"user\" or no \"password\": want {\"user\", \"password\", \"role\"}", path)
	}
	if c.Role == "" {
		c.Role = string(natslog.RoleWriter)
	}
	if _, err := natslog.ParseRole(c.Role); err != nil {
		return c, fmt.Errorf("credentials %s: %w", path, err)
	}
	if c.FollowerID != "" {
		if c.Role != string(natslog.RoleFollower) {
			return c, fmt.Errorf("credentials %s: a follower_id in credentials of role %s; only a follower's have one", path, c.Role)
		}
		if err := natslog.CheckFollowerID(c.FollowerID); err != nil {
			return c, fmt.Errorf("credentials %s: %w", path, err)
		}
	}
	return c, nil
}

// WriteCreds writes c to path (0600), whole (WriteFileAtomic).
func WriteCreds(path string, c Creds) error {
	b, _ := json.MarshalIndent(c, "", "  ")
	return WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// RoleCredentials loads the data dir's credentials of role (reader,
// follower, worker or writer), creating them (0600, a fresh random
// password, and a follower's a fresh follower id) if absent; a
// follower's file of before follower ids gets one, written into it, its
// password kept. The data dir never holds admin or serve
// credentials: serve's password lives only in the serve process, so that
// nothing the data dir holds can answer a request made to serve.
func (d Dir) RoleCredentials(role natslog.Role) (Creds, error) {
	switch role {
	case natslog.RoleAdmin:
		return Creds{}, errors.New("credentials: the data dir holds no admin credentials (see `logbook creds issue --role admin`)")
	case natslog.RoleServe:
		return Creds{}, errors.New("credentials: the data dir holds no serve credentials: serve's own password lives only in the serve process (for a cluster of your own, `logbook creds cluster` writes serve.json)")
	}
	path := d.CredsFile(role)
	c, err := ReadCreds(path)
	if err == nil {
		if c.Role != string(role) {
			return c, fmt.Errorf("credentials %s: role %s, want %s; remove it to generate new ones", path, c.Role, role)
		}
		if role == natslog.RoleFollower && c.FollowerID == "" {
			c.FollowerID = natslog.NewFollowerID()
			if err := WriteCreds(path, c); err != nil {
				return c, fmt.Errorf("credentials: %w", err)
			}
		}
		return c, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return c, fmt.Errorf("%w; remove it to generate new ones", err)
	}
	if err := d.Ensure(); err != nil {
		return c, err
	}
	c = Creds{User: string(role), Password: natslog.NewPassword(), Role: string(role)}
	if role == natslog.RoleFollower {
		c.FollowerID = natslog.NewFollowerID()
	}
	if err := WriteCreds(path, c); err != nil {
		return c, fmt.Errorf("credentials: %w", err)
	}
	return c, nil
}

// EmbeddedUsers returns the users of the data dir's embedded server:
// serve first (the server's own connection, with a fresh random password
// no file holds), writer, reader, follower and worker with the data
// dir's credentials (the follower answering for the follower id its
// credentials name), and admin with admin's.
func (d Dir) EmbeddedUsers(admin Creds) ([]natslog.User, error) {
	us := []natslog.User{{Name: string(natslog.RoleServe), Password: natslog.NewPassword(), Role: natslog.RoleServe}}
	for _, r := range []natslog.Role{natslog.RoleWriter, natslog.RoleReader, natslog.RoleFollower, natslog.RoleWorker} {
		c, err := d.RoleCredentials(r)
		if err != nil {
			return nil, err
		}
		us = append(us, natslog.User{Name: c.User, Password: c.Password, Role: r, FollowerID: c.FollowerID})
	}
	return append(us, natslog.User{Name: admin.User, Password: admin.Password, Role: natslog.RoleAdmin}), nil
}

// AdminCredentials returns the admin credentials serve starts its
// embedded server with: those in file (--admin-creds), or a user with a
// fresh random password that only this process knows, used to create or
// check the stream at start and then dropped. A file that cannot be
// read, or is not admin's, is an error naming --admin-creds.
func AdminCredentials(file string) (Creds, error) {
	if file == "" {
		return Creds{User: "admin", Password: natslog.NewPassword(), Role: string(natslog.RoleAdmin)}, nil
	}
	c, err := ReadCreds(file)
	if err != nil {
		return c, fmt.Errorf("--admin-creds: %w", err)
	}
	if c.Role != string(natslog.RoleAdmin) {
		return c, fmt.Errorf("--admin-creds %s: role %s, want admin", file, c.Role)
	}
	return c, nil
}

// CheckOut refuses creds issue's --out path when it exists and is not a
// regular file (a symlink is neither followed nor replaced; a FIFO or a
// device is never opened), or is a regular file and force is false. A
// path that does not exist passes. Errors name --out.
func CheckOut(out string, force bool) error {
	st, err := os.Lstat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err
		}
		return fmt.Errorf("--out %s: %w", out, err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("--out %s: %s, not a regular file; --out writes a new file (or, with --force, replaces a regular one): to pipe the credentials, leave out --out and they go to standard output", out, hookspool.FileKind(st.Mode()))
	case !force:
		return fmt.Errorf("--out %s: the file exists; pass --force to replace it", out)
	}
	return nil
}

// WriteOut writes c, indented JSON, to the new file out (0600), or with
// force replaces a regular file there whole (WriteFileNew,
// WriteFileAtomic). Errors name --out: a file that exists without force
// says to pass --force.
func WriteOut(out string, c Creds, force bool) error {
	b, _ := json.MarshalIndent(c, "", "  ")
	write := WriteFileNew
	if force {
		write = WriteFileAtomic
	}
	switch err := write(out, append(b, '\n'), 0o600); {
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("--out %s: the file exists; pass --force to replace it", out)
	case err != nil:
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err
		}
		return fmt.Errorf("--out %s: %w", out, err)
	}
	return nil
}
