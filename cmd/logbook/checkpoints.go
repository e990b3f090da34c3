package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/merkle"
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
	boundDuration(f, "checkpoint-interval", time.Second, time.Hour, false)
}

// merkleDir is the data dir's folder of stored tree hashes, one file per
// stream incarnation (origin).
const merkleDir = "merkle"

// treePath returns the stored-hash file of origin in dd:
// merkle/<the stream's creation time>.hashes.
func treePath(dd dataDir, origin string) string {
	return dd.path(merkleDir, strings.NewReplacer("/", "_", ":", "_").Replace(strings.TrimPrefix(origin, merkle.OriginPrefix))+treeExt)
}

// treeExt ends the name of every stored-hash file.
const treeExt = ".hashes"

// storedTrees reads every stored-hash file in dd, by origin, without
// writing to them.
func storedTrees(dd dataDir) (map[string]*merkle.Tree, error) {
	ents, err := os.ReadDir(dd.path(merkleDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]*merkle.Tree{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), treeExt)
		if !ok || e.IsDir() {
			continue
		}
		t, err := merkle.LoadTree(dd.path(merkleDir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[merkle.OriginPrefix+name] = t
	}
	return out, nil
}

// openTree opens the stored-hash file of origin in dd, making the folder.
func openTree(dd dataDir, origin string) (*merkle.Tree, error) {
	if err := os.MkdirAll(dd.path(merkleDir), 0o700); err != nil {
		return nil, err
	}
	return merkle.OpenTree(treePath(dd, origin))
}

// witnessState is the witness's state file in the data dir.
const witnessState = "witness.json"

// checkpointActor returns what serve runs for the log's checkpoints: on a
// writer, the Checkpointer that signs them; on a reader (a follower
// host), the Witnesser that checks and co-signs them. Neither stops
// serve: a server error is said and tried again, a hole in the log or a
// refused checkpoint is said loudly and counted.
func checkpointActor(ctx context.Context, g *globals, b *backend, reader bool, f checkpointFlags, web *host.HTTP) (func(context.Context) error, func(), error) {
	dd := b.dd
	sid, err := b.log.Identity(ctx)
	if err != nil {
		return nil, nil, err
	}
	say := func(format string, args ...any) { fmt.Fprintf(g.stderr, "logbook serve: "+format+"\n", args...) }
	js, err := jetstream.New(b.nc)
	if err != nil {
		return nil, nil, err
	}
	origin := merkle.Origin(sid)
	tree, err := openTree(dd, origin)
	if err != nil {
		return nil, nil, err
	}
	closeTree := func() { tree.Close() }
	// retry runs run until ctx is done, again 5 s after each error.
	retry := func(what string, run func(context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error {
			for {
				err := run(ctx)
				if ctx.Err() != nil {
					return nil
				}
				if gap, ok := errors.AsType[*merkle.GapError](err); ok {
					say("%s: STOPPED: %v; no checkpoint is signed or co-signed over a log with a hole (run `logbook verify`)", what, gap)
					<-ctx.Done()
					return nil
				}
				say("%s: %v; again in 5s", what, err)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(5 * time.Second):
				}
			}
		}
	}
	if !reader {
		signer, vkey, err := merkle.LoadCheckpointKey(string(dd))
		if err != nil {
			closeTree()
			return nil, nil, err
		}
		say("checkpoints of %s signed by %s every %d messages or %s (tree in %s)", origin, vkey, f.every, f.interval, treePath(dd, origin))
		c := &merkle.Checkpointer{Log: b.log, JS: js, Tree: tree, Signer: signer, Origin: origin, Every: f.every, Interval: f.interval,
			Logf: say,
			Published: func(merkle.Checkpoint, uint64) {
				web.ObserveCheckpoint("published")
			},
		}
		return retry("checkpoints", func(ctx context.Context) error {
			if _, err := merkle.EnsureStream(ctx, js); err != nil {
				return err
			}
			return c.Run(ctx)
		}), closeTree, nil
	}
	w, err := merkle.LoadWitnessKey(string(dd))
	if err != nil {
		closeTree()
		return nil, nil, err
	}
	keys, err := merkle.LoadKeys(string(dd))
	if err != nil {
		closeTree()
		return nil, nil, err
	}
	if len(keys.Checkpoint) == 0 {
		say("witness: no checkpoint key trusted in %s: nothing will be co-signed (pin the writer's key: logbook checkpoint trust KEY)", dd.path(merkle.TrustedKeysFile))
	}
	say("witness %s of %s", w.VerifierKey(), origin)
	wt := &merkle.Witnesser{Log: b.log, JS: js, Tree: tree, Witness: w, Keys: keys.Checkpoint, Origin: origin, State: dd.path(witnessState),
		Logf: say,
		Refused: func(r merkle.Refusal) {
			say("WITNESS REFUSED: %v", r)
			web.ObserveCheckpoint("refused")
		},
		Cosigned: func(merkle.Checkpoint) {
			web.ObserveCheckpoint("cosigned")
		},
	}
	return retry("witness", wt.Run), closeTree, nil
}

// checkWitness is doctor's line for the witness's state: a refusal is a
// failure naming the checkpoint and the sequences.
func checkWitness(dd dataDir) (doctorCheck, bool) {
	c := doctorCheck{Name: "witness"}
	st, err := merkle.ReadWitnessState(dd.path(witnessState))
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
			dd, err := resolveDataDir(g.data)
			if err != nil {
				return err
			}
			var k merkle.Keys
			for _, a := range args {
				if err := k.ParseKey(a); err != nil {
					return usageErrorf("%v", err)
				}
			}
			if err := os.MkdirAll(string(dd), 0o700); err != nil {
				return err
			}
			// A key trusted already is not written again.
			had, err := os.ReadFile(dd.path(merkle.TrustedKeysFile))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			known := map[string]bool{}
			for l := range strings.Lines(string(had)) {
				known[strings.TrimSpace(l)] = true
			}
			var add []string
			for _, a := range args {
				if a = strings.TrimSpace(a); !known[a] {
					known[a] = true
					add = append(add, a)
				}
			}
			if len(add) == 0 {
				fmt.Fprintf(g.stdout, "trusted already in %s\n", dd.path(merkle.TrustedKeysFile))
				return nil
			}
			args = add
			f, err := os.OpenFile(dd.path(merkle.TrustedKeysFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			_, err = io.WriteString(f, strings.Join(args, "\n")+"\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "trusted %s in %s; a serve already running reads it at its next start\n", plural(len(args), "key"), dd.path(merkle.TrustedKeysFile))
			return nil
		},
	}
	cmd.AddCommand(key, trust)
	return cmd
}
