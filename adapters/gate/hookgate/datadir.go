package hookgate

import (
	"fmt"

	"github.com/logbook-dev/logbook/adapters/datadir"
)

// DataDirServer returns an Asker's Server for the data dir d reached as
// r: the server its serve.json names (or r's URL and credentials), the
// role the hook connects as and the API's prefix. Credentials r cannot
// use, or no server running, is an error saying the call is kept in the
// spool and no verdict can be made.
func DataDirServer(d datadir.Dir, r datadir.Reach) func() (Server, error) {
	return func() (Server, error) {
		if _, _, err := r.CredsOptions(); err != nil {
			return Server{}, fmt.Errorf("%w, so no verdict can be made"+keptNote, err)
		}
		url, opts, ok := d.ServerURL(r)
		if !ok {
			return Server{}, fmt.Errorf("no Logbook server is running (no %s), so no verdict can be made"+keptNote, d.Path("serve.json"))
		}
		srv := Server{URL: url, Opts: opts, Role: d.ConnRole(r)}
		if si, ok := d.ReadServeInfo(); ok {
			srv.Prefix = si.API
		}
		return srv, nil
	}
}
