package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/flagrange"
	"github.com/logbook-dev/logbook/adapters/merkle"
	"github.com/logbook-dev/logbook/adapters/term"
)

// checkpointFlags are serve's checkpoint settings.
type checkpointFlags struct {
	every    int64         // messages between checkpoints
	interval time.Duration // at most this long between checkpoints of a grown log
}

// add registers the flags on cmd, with their ranges.
func (c *checkpointFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Int64Var(&c.every, "checkpoint-every", merkle.DefaultEvery, "publish a signed checkpoint of the log's Merkle tree every this many messages")
	f.DurationVar(&c.interval, "checkpoint-interval", merkle.DefaultInterval, "and at least this often while the log grows")
	bound(f, "checkpoint-every", 1, 1_000_000)
	flagrange.BoundDuration(f, "checkpoint-interval", time.Second, time.Hour, false)
}

// checkWitness is doctor's line for the witness's state: a refusal is a
// failure naming the checkpoint and the sequences.
func checkWitness(dd dataDir) (doctorCheck, bool) {
	c := doctorCheck{Name: "witness"}
	st, err := merkle.ReadWitnessState(dd.path(merkle.WitnessStateFile))
	if err != nil {
		c.Status, c.Detail = checkFail, err.Error()
		return c, true
	}
	if st.Cosigned == 0 && st.Refused == 0 {
		return c, false
	}
	if st.Refused > 0 {
		c.Status = checkFail
		c.Detail = fmt.Sprintf("refused %d checkpoints (co-signed %d); the latest at %s: %s", st.Refused, st.Cosigned, st.RefusedAt.Format(time.RFC3339), st.Refusal)
		c.Fix = "the log this host reads and the one the checkpoint was signed over differ: run `logbook verify` on the writing host and compare"
		return c, true
	}
	c.Status = checkOK
	c.Detail = fmt.Sprintf("co-signed %d checkpoints, the last of size %d", st.Cosigned, st.Last.Size)
	return c, true
}

func checkpointCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "The keys that sign and witness the log's checkpoints",
	}
	key := &cobra.Command{
		Use:   "key",
		Short: "Print this data dir's checkpoint key and witness key (verifier keys, safe to share), making them if missing",
		Long: `key prints the verifier keys of the data dir's checkpoint key and witness
key, making the keys when the data dir has none yet. It refuses a data
dir that does not exist or is empty: keys made in a mistyped --data sign
nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseSocket(g); err != nil {
				return err
			}
			dd, err := existingDataDir(g.data)
			if err != nil {
				return err
			}
			_, vkey, err := merkle.LoadCheckpointKey(string(dd))
			if err != nil {
				return err
			}
			w, err := merkle.LoadWitnessKey(string(dd))
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(g.stdout, struct {
					Checkpoint string `json:"checkpoint"`
					Witness    string `json:"witness"`
				}{vkey, w.VerifierKey()})
			}
			fmt.Fprintf(g.stdout, "checkpoint %s\nwitness %s\n", vkey, w.VerifierKey())
			return nil
		},
	}
	trust := &cobra.Command{
		Use:   "trust KEY...",
		Short: "Pin checkpoint or witness verifier keys (as `logbook checkpoint key` prints them on another host)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dd, err := ownDataDir(g)
			if err != nil {
				return err
			}
			var k merkle.Keys
			for _, a := range args {
				if err := k.ParseKey(a); err != nil {
					return usageErrorf("%v", err)
				}
			}
			add, err := merkle.Trust(string(dd), args)
			if err != nil {
				return err
			}
			if len(add) == 0 {
				fmt.Fprintf(g.stdout, "trusted already in %s\n", dd.path(merkle.TrustedKeysFile))
				return nil
			}
			args = add
			fmt.Fprintf(g.stdout, "trusted %s in %s; a serve already running reads it at its next start\n", term.Plural(len(args), "key"), dd.path(merkle.TrustedKeysFile))
			return nil
		},
	}
	cmd.AddCommand(key, trust)
	return cmd
}
