package host

import (
	"context"
	"io"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// IssueCreds returns the credentials of role on the data dir dd for
// another tool or host (`logbook creds issue`), with the URL of the
// server serve.json names if one runs: a new admin's (never kept in the
// data dir), or the data dir's of role, made if absent
// (datadir.Dir.RoleCredentials). A writer's and a worker's also carry a
// signing key of their own, registered on the data dir's log
// (datadir.Dir.IssueKey), which it opens as "logbook creds issue" (Open,
// what it waits for said on stderr) and closes. Errors are the data
// dir's, Open's and IssueKey's.
func IssueCreds(ctx context.Context, dd datadir.Dir, role natslog.Role, stderr io.Writer) (datadir.Creds, error) {
	var c datadir.Creds
	var err error
	if role == natslog.RoleAdmin {
		c, _ = datadir.AdminCredentials("")
	} else if c, err = dd.RoleCredentials(role); err != nil {
		return c, err
	}
	if si, ok := dd.ReadServeInfo(); ok {
		c.URL = si.URL
	}
	if role == natslog.RoleWriter || role == natslog.RoleWorker {
		// The key is registered on the data dir's log, opened on its
		// own (no --nats-url, no --creds).
		open := func() (*natslog.Log, func() error, error) {
			o, err := Open(ctx, Client{Dir: dd, Cmd: "logbook creds issue", Stderr: stderr})
			if err != nil {
				return nil, nil, err
			}
			return o.Log, func() error { o.Close(); return nil }, nil
		}
		if err := dd.IssueKey(ctx, role, &c, open); err != nil {
			return c, err
		}
	}
	return c, nil
}
