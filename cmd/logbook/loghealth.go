package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/flagrange"
	"github.com/logbook-dev/logbook/adapters/term"
)

// staleNote says on stderr that what a command printed was read from the
// server's projection while its log did not answer (st): as a line for a
// person, or, with --json, as one JSON object with st's fields
// (log_unavailable_since, as_of_seq, log_error), so that stdout keeps its
// shape. It says nothing for an answer that is not stale.
func staleNote(g *globals, st api.Stale) {
	if !st.IsStale() {
		return
	}
	if g.json {
		b, _ := json.Marshal(st)
		fmt.Fprintf(g.stderr, "%s\n", b)
		return
	}
	fmt.Fprintf(g.stderr, "%s: %s\n", g.cmdName, term.Safe(st.Text(time.Now())))
}

// defaultLogWait is replay's and verify's --wait: how long they wait for
// the log's stream leader before failing.
const defaultLogWait = 10 * time.Second

// logWaitFlag adds --wait to cmd, which sets g.logWait when cmd runs on
// a cluster (--nats-url), and only then: the data dir's own server has
// no leader to elect or lose, and a slow answer there (a loaded machine)
// is slowness, not a log without quorum. Another command's g.logWait
// stays 0.
func logWaitFlag(cmd *cobra.Command, g *globals) {
	wait := cmd.Flags().Duration("wait", defaultLogWait, "on a cluster (--nats-url): how long to wait for the log's stream leader (one being elected, or none without quorum) before failing")
	flagrange.BoundDuration(cmd.Flags(), "wait", time.Second, time.Hour, false)
	run := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if g.natsURL != "" {
			g.logWait = *wait
		}
		return run(cmd, args)
	}
}
