package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

func credsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "creds",
		Short: "Credentials of the data dir's server, one per role",
	}
	var role, out string
	var force bool
	issue := &cobra.Command{
		Use:   "issue --role reader|follower|worker|writer|admin [--out FILE [--force]]",
		Short: "Write a credentials file for another tool or host",
		Long: `issue writes the credentials of a role on the data dir's server to FILE
(0600; default: standard output), with the URL of the running server if
one runs. Pass it with --creds FILE or LOGBOOK_CREDS=FILE, so no password
appears in a command line. FILE must not exist yet, or be a regular file
and --force given: a symlink, a FIFO, a device or a directory there is
refused (to pipe the credentials, leave out --out).

  reader    reads the stream (consumers, gets) and calls the read verbs;
            appends nothing, takes and answers no request
  follower  a reader that answers the read verbs on the subjects of the
            follower id it names, and no other follower's (serve --role
            reader --nats-url URL --creds FILE); the data dir holds one
            follower's
  worker    runs commands: command and session events, output, its buckets
  writer    what hook and the CLI do: any event, calls to the API; it
            cannot take or answer a request made to serve

worker and writer credentials also carry a signing key of their own,
registered on the log for that role with the data dir's admin key, and the
pinned admin key: what is appended with them is signed by that key.
  admin     may also create, update, delete and purge the stream

Only admin may delete, purge or update the stream. admin credentials are
never kept in the data dir: issue --role admin makes a new one that a
server accepts only when started with serve --admin-creds FILE. serve's
own credentials (the only ones that answer the API: the gate, verify)
are never issued: the embedded server's live only in the serve process.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := natslog.ParseRole(role)
			if err != nil {
				// The roles creds issue gives (serve's never), not every role.
				return usageErrorf("--role %q: want reader, follower, worker, writer or admin", role)
			}
			dd, err := ownDataDir(g)
			if err != nil {
				return err
			}
			if r == natslog.RoleServe {
				return usageErrorf("--role serve: serve's credentials are never issued; the embedded server's live only in the serve process (for a cluster of your own, `logbook creds cluster` writes serve.json)")
			}
			if r == natslog.RoleAdmin && out != "" && datadir.WritesInto(out, string(dd)) {
				return fmt.Errorf("--out %s: admin credentials stay out of the data dir %s", out, dd)
			}
			if out != "" {
				if err := datadir.CheckOut(out, force); err != nil {
					return err
				}
			}
			c, err := host.IssueCreds(cmd.Context(), dd.dir(), r, g.stderr)
			if err != nil {
				return err
			}
			if out == "" {
				return writeJSON(g.stdout, c)
			}
			if err := datadir.WriteOut(out, c, force); err != nil {
				return err
			}
			fmt.Fprintf(g.stderr, "logbook creds: %s credentials in %s\n", r, out)
			return nil
		},
	}
	issue.Flags().StringVar(&role, "role", "", "reader, follower, worker, writer or admin")
	issue.Flags().StringVar(&out, "out", "", "new file to write (0600); default standard output")
	issue.Flags().BoolVar(&force, "force", false, "replace the regular file --out names if it exists")
	_ = issue.MarkFlagRequired("role")
	cmd.AddCommand(issue, credsClusterCmd(g))
	return cmd
}
