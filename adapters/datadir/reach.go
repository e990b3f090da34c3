package datadir

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Reach is how a command is told to reach a server: its --nats-url,
// its --creds file and the role it asks for.
type Reach struct {
	URL       string       // --nats-url; "" for none
	CredsPath string       // --creds (or LOGBOOK_CREDS); "" for none
	Role      natslog.Role // the role the command asks for; "": writer
}

// CredsOptions returns the connection options of r's credentials file —
// its user, and its role's inbox prefix — and the URL the file names, if
// any; none without a file. A file that cannot be read or checked is an
// error "--creds: …".
func (r Reach) CredsOptions() ([]nats.Option, string, error) {
	if r.CredsPath == "" {
		return nil, "", nil
	}
	c, err := ReadCreds(r.CredsPath)
	if err != nil {
		return nil, "", fmt.Errorf("--creds: %w", err)
	}
	return []nats.Option{nats.UserInfo(c.User, c.Password), natslog.InboxOption(natslog.Role(c.Role))}, c.URL, nil
}

// ServerURL returns the URL and options to reach a server for r: r.URL
// (or the credentials file's URL, or the running serve's loopback
// listener from serve.json) with the file's user, else the data dir's
// credentials of r.Role (writer unless the command asks for another).
// It reports false when there is no server to try, or credentials
// cannot be read. serve.json is read only when r names no URL.
func (d Dir) ServerURL(r Reach) (string, []nats.Option, bool) {
	if r.URL != "" {
		return d.ServerURLOf(r, ServeInfo{}, false)
	}
	si, ok := d.ReadServeInfo()
	return d.ServerURLOf(r, si, ok)
}

// ServerURLOf is ServerURL with serve.json as si, as a caller read it
// once (ReadServeInfo: ok reports there was one) to take the URL, the
// role (ConnRoleOf) and the API prefix from the same file.
func (d Dir) ServerURLOf(r Reach, si ServeInfo, ok bool) (string, []nats.Option, bool) {
	opts, credsURL, err := r.CredsOptions()
	if err != nil {
		return "", nil, false
	}
	if r.URL != "" {
		return r.URL, opts, true
	}
	if !ok {
		if credsURL != "" {
			return credsURL, opts, true
		}
		return "", nil, false
	}
	if opts != nil {
		return si.URL, opts, true
	}
	if strings.Contains(si.URL, "@") {
		return si.URL, nil, true // a cluster URL with its own credentials
	}
	role := r.Role
	if role == "" {
		role = natslog.RoleWriter
	}
	c, err := d.RoleCredentials(role)
	if err != nil {
		return "", nil, false
	}
	return si.URL, []nats.Option{nats.UserInfo(c.User, c.Password), natslog.InboxOption(role)}, true
}

// ConnRole returns the role ServerURL connects as, or "" when unknown
// (an external URL without credentials, or with credentials of its
// own, or a credentials file that cannot be read). serve.json is read
// only when r names neither a URL nor a credentials file.
func (d Dir) ConnRole(r Reach) string {
	if r.CredsPath != "" || r.URL != "" {
		return ConnRoleOf(r, ServeInfo{}, false)
	}
	si, ok := d.ReadServeInfo()
	return ConnRoleOf(r, si, ok)
}

// ConnRoleOf is ConnRole with serve.json as si, read once by the caller
// (ReadServeInfo: ok reports there was one), as for ServerURLOf.
func ConnRoleOf(r Reach, si ServeInfo, ok bool) string {
	if r.CredsPath != "" {
		c, err := ReadCreds(r.CredsPath)
		if err != nil {
			return ""
		}
		return c.Role
	}
	if r.URL != "" {
		return ""
	}
	if !ok || strings.Contains(si.URL, "@") {
		return ""
	}
	if r.Role == "" {
		return string(natslog.RoleWriter)
	}
	return string(r.Role)
}

// ConnectError puts a failed connect to url for r in the user's terms:
// which server refused what, and which credentials to pass (--creds or
// LOGBOOK_CREDS). It wraps err; an error it has no words for is err.
func (r Reach) ConnectError(url string, err error) error {
	switch {
	case errors.Is(err, nats.ErrAuthorization) && r.URL != "" && r.CredsPath == "":
		return fmt.Errorf("the server at %s refused a connection without credentials: use --creds FILE or LOGBOOK_CREDS (e.g. writer.json from `logbook creds cluster`): %w", natslog.RedactURL(url), err)
	case errors.Is(err, nats.ErrAuthorization) && r.CredsPath != "":
		return fmt.Errorf("the server at %s refused the credentials in %s: %w", natslog.RedactURL(url), r.CredsPath, err)
	case errors.Is(err, nats.ErrNoServers) && r.URL != "" && r.CredsPath == "":
		return fmt.Errorf("no server at %s took the connection (none answered, or each refused one without credentials: use --creds FILE or LOGBOOK_CREDS): %w", natslog.RedactURL(url), err)
	case errors.Is(err, nats.ErrNoServers) && r.URL != "":
		return fmt.Errorf("no server at %s took the connection (none answered, or each refused the credentials in %s): %w", natslog.RedactURL(url), r.CredsPath, err)
	}
	return err
}
