package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// streamCmd is `logbook stream`: the LOGBOOK stream on a NATS cluster of
// one's own.
func streamCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stream",
		Short: "The LOGBOOK stream on your own NATS server or cluster",
	}
	var (
		replicas int
		wait     time.Duration
	)
	init := &cobra.Command{
		Use:   "init --nats-url URL --creds admin.json [--replicas 3]",
		Short: "Create the LOGBOOK stream, or check the one there",
		Long: `init connects to --nats-url with admin credentials (--creds, as
` + "`logbook creds cluster`" + ` writes them) and creates the LOGBOOK stream with
--replicas copies (3 on a three-node cluster), append-only at the server:
file storage, deny delete and purge, discard new, atomic batches. An
existing stream is checked instead: one whose settings break the log's
rules (async persistence, no deny flags, a max age, …) is refused, naming
each setting; its replica count is reported, never changed.

The nodes themselves must run with jetstream { sync_interval: always }: a
client cannot see or set it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if g.natsURL == "" {
				return usageErrorf("stream init needs --nats-url (or LOGBOOK_NATS_URL): the embedded server's stream is made by `logbook serve`")
			}
			if replicas < 1 || replicas > 5 {
				return usageErrorf("--replicas %d: want 1 to 5", replicas)
			}
			if wait < 0 {
				return usageErrorf("--wait %s: want 0 or more", wait)
			}
			info, existed, err := host.InitStream(ctx, g.reach(), replicas, wait)
			if err != nil {
				return err
			}
			what := "created"
			if existed {
				what = "exists, settings checked"
			}
			fmt.Fprintf(g.stdout, "stream %s: %s; R%d, last seq %d\n", natslog.StreamName, what, info.Config.Replicas, info.State.LastSeq)
			if ci := info.Cluster; ci != nil {
				var peers []string
				for _, p := range ci.Replicas {
					state := "current"
					if !p.Current {
						state = "catching up"
					}
					if p.Offline {
						state = "offline"
					}
					peers = append(peers, p.Name+" ("+state+")")
				}
				fmt.Fprintf(g.stdout, "cluster %s: leader %s; followers %s\n", ci.Name, ci.Leader, strings.Join(peers, ", "))
			}
			if existed && info.Config.Replicas != replicas {
				fmt.Fprintf(g.stderr, "logbook stream: the stream keeps R%d (--replicas %d not applied to an existing stream)\n", info.Config.Replicas, replicas)
			}
			return nil
		},
	}
	init.Flags().IntVar(&replicas, "replicas", 3, "copies of the stream when created: 3 on a three-node cluster, 1 on one server")
	bound(init.Flags(), "replicas", 1, 5)
	init.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for nodes that have just started to listen and elect their JetStream meta leader")
	cmd.AddCommand(init)
	return cmd
}

// credsClusterCmd is `logbook creds cluster`: users for nats-server
// nodes of one's own, and a credentials file per role.
func credsClusterCmd(g *globals) *cobra.Command {
	var out, url string
	var followers int
	cmd := &cobra.Command{
		Use:   "cluster --out DIR [--url URLS] [--followers N]",
		Short: "Write the users of every role for your own nats-server nodes",
		Long: `cluster writes, in DIR (created 0700; refused if it holds users.conf),
users.conf — a nats-server authorization block with one user per role and
the permissions the embedded server gives them — for every node's config
to include, and reader.json, follower.json, worker.json, writer.json,
serve.json and admin.json, the credentials files of those users (0600)
with --url as their url. Each follower's credentials answer for a
follower id of their own only (logbook.ro.<id>.<verb>): with
--followers N, follower-2.json … follower-N.json are N-1 more followers.

Give each host only the file of its role: admin.json to whoever runs
` + "`logbook stream init`" + `, serve.json to serve hosts that append, writer.json
to the hooks and the CLI that reach them, a follower file to each
follower (serve --role reader), reader.json to tools that only read, worker.json to
worker hosts. Only serve.json may take and answer a request made to a
serve (the gate's, verify's): keep it where no agent runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := host.WriteClusterUsers(out, url, followers); err != nil {
				return err
			}
			fol := "follower"
			if followers > 1 {
				fol = fmt.Sprintf("%d followers'", followers)
			}
			fmt.Fprintf(g.stderr, "logbook creds: users.conf and reader, %s, worker, writer, serve and admin credentials in %s\n", fol, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write users.conf and the credentials files in")
	cmd.Flags().StringVar(&url, "url", "", "the cluster's client URLs, comma-separated, written into each credentials file")
	cmd.Flags().IntVar(&followers, "followers", 1, "how many followers' credentials to write, each answering for a follower id of its own")
	bound(cmd.Flags(), "followers", 1, maxFollowers)
	return cmd
}
