package merkle

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// TreeDir is the data dir's folder of stored tree hashes, one file per
// stream incarnation (origin).
const TreeDir = "merkle"

// treeExt ends the name of every stored-hash file.
const treeExt = ".hashes"

// WitnessStateFile is the witness's state file in the data dir.
const WitnessStateFile = "witness.json"

// TreePath returns the stored-hash file of origin in the data dir dir:
// merkle/<the stream's creation time>.hashes.
func TreePath(dir, origin string) string {
	return filepath.Join(dir, TreeDir, strings.NewReplacer("/", "_", ":", "_").Replace(strings.TrimPrefix(origin, OriginPrefix))+treeExt)
}

// StoredTrees reads every stored-hash file in the data dir dir, by
// origin, without writing to them. No folder: nil, nil. The caller
// closes each tree.
func StoredTrees(dir string) (map[string]*Tree, error) {
	ents, err := os.ReadDir(filepath.Join(dir, TreeDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]*Tree{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), treeExt)
		if !ok || e.IsDir() {
			continue
		}
		t, err := LoadTree(filepath.Join(dir, TreeDir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[OriginPrefix+name] = t
	}
	return out, nil
}

// OpenStoredTree opens the stored-hash file of origin in the data dir
// dir for writing, making the folder (0700). The caller closes it.
func OpenStoredTree(dir, origin string) (*Tree, error) {
	if err := os.MkdirAll(filepath.Join(dir, TreeDir), 0o700); err != nil {
		return nil, err
	}
	return OpenTree(TreePath(dir, origin))
}

// ActorConfig is what Actor runs the checkpoints of a log with.
type ActorConfig struct {
	Dir    string // the data dir: keys, the stored tree, the witness's state
	Log    *natslog.Log
	JS     jetstream.JetStream
	Reader bool // a follower host: witness and co-sign rather than sign
	// Every and Interval are the Checkpointer's (a writer's only).
	Every    int64
	Interval time.Duration
	// Say receives every line to tell (nil: none), on the actor's
	// goroutine.
	Say func(format string, args ...any)
	// Observed, when not nil, is told of each outcome: "published",
	// "refused", "cosigned".
	Observed func(outcome string)
	// Hole is the Checkpointer's (a writer's only): a hole found in the
	// log by other means than the tree's own read; nil for none.
	Hole func() *GapError
}

// Actor returns what serve runs for the log's checkpoints: on a writer,
// the Checkpointer that signs them; on a reader (a follower host), the
// Witnesser that checks and co-signs them; and the closer of the stored
// tree it opened (call it once run has returned). run blocks until ctx
// is done and returns nil: a server error is said and tried again 5 s
// later, a hole in the log (*GapError) is said loudly and stops the
// checkpoints until ctx is done, a refused checkpoint is said and
// counted. An error is the log's identity, the keys' or the tree's.
func Actor(ctx context.Context, c ActorConfig) (run func(context.Context) error, closer io.Closer, err error) {
	say, observed := c.Say, c.Observed
	if say == nil {
		say = func(string, ...any) {}
	}
	if observed == nil {
		observed = func(string) {}
	}
	sid, err := c.Log.Identity(ctx)
	if err != nil {
		return nil, nil, err
	}
	origin := Origin(sid)
	tree, err := OpenStoredTree(c.Dir, origin)
	if err != nil {
		return nil, nil, err
	}
	retry := func(what string, run func(context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error {
			for {
				err := run(ctx)
				if ctx.Err() != nil {
					return nil
				}
				if gap, ok := errors.AsType[*GapError](err); ok {
					say("WARN: %s: STOPPED: %v; no checkpoint is signed or co-signed over a log with a hole"+natslog.VerifyHint, what, gap)
					<-ctx.Done()
					return nil
				}
				say("WARN: %s: %v; again in 5s", what, err)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(5 * time.Second):
				}
			}
		}
	}
	if !c.Reader {
		signer, vkey, err := LoadCheckpointKey(c.Dir)
		if err != nil {
			tree.Close()
			return nil, nil, err
		}
		cp := &Checkpointer{Log: c.Log, JS: c.JS, Tree: tree, Signer: signer, Origin: origin, Every: c.Every, Interval: c.Interval,
			Logf: say, Hole: c.Hole,
			Published: func(Checkpoint, uint64) { observed("published") },
		}
		every, interval := cp.Cadence()
		say("INFO: checkpoints of %s signed by %s every %d messages or %s (tree in %s)", origin, vkey, every, interval, TreePath(c.Dir, origin))
		v := c.Log.Verifier()
		if v != nil {
			// And serve's own reads (the API's audits and replays)
			// take each judgment as soon as it is stated.
			cp.Judged = func(j Judgment, _ uint64) {
				if p, err := Prove(tree, j.Size, j.Root); err == nil {
					c.Log.SetJudged(&natslog.Judged{Through: uint64(j.Size), Quarantined: j.Quarantined, Check: p.Check})
				}
			}
		}
		return retry("checkpoints", func(ctx context.Context) error {
			if _, err := EnsureStream(ctx, c.JS); err != nil {
				return err
			}
			if v != nil && cp.Judge == nil {
				// Each checkpoint states what serve judged of the log up
				// to it: the readers' fast path (Judgment). What its last
				// statement says is not judged again.
				judge, why, err := ResumeJudger(ctx, c.Log, c.JS, tree, c.Dir, v.Admin())
				if err != nil {
					return err
				}
				say("INFO: judgments: %s", why)
				cp.Judge = judge
			}
			return cp.Run(ctx)
		}), tree, nil
	}
	w, err := LoadWitnessKey(c.Dir)
	if err != nil {
		tree.Close()
		return nil, nil, err
	}
	keys, err := LoadKeys(c.Dir)
	if err != nil {
		tree.Close()
		return nil, nil, err
	}
	if len(keys.Checkpoint) == 0 {
		say("WARN: witness: no checkpoint key trusted in %s: nothing will be co-signed (pin the writer's key: logbook checkpoint trust KEY)", filepath.Join(c.Dir, TrustedKeysFile))
	}
	say("INFO: witness %s of %s", w.VerifierKey(), origin)
	wt := &Witnesser{Log: c.Log, JS: c.JS, Tree: tree, Witness: w, Keys: keys.Checkpoint, Origin: origin, State: filepath.Join(c.Dir, WitnessStateFile),
		Logf: say,
		Refused: func(r Refusal) {
			say("WARN: WITNESS REFUSED: %v", r)
			observed("refused")
		},
		Cosigned: func(Checkpoint) { observed("cosigned") },
	}
	return retry("witness", wt.Run), tree, nil
}

// Trust appends to the data dir dir's TrustedKeysFile (0600, made with
// dir, 0700, when missing) each of keys, trimmed, that it does not hold
// yet, in order, and returns those it added (none: nothing written).
// The keys are the caller's to check (Keys.ParseKey).
func Trust(dir string, keys []string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, TrustedKeysFile)
	had, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	known := map[string]bool{}
	for l := range strings.Lines(string(had)) {
		known[strings.TrimSpace(l)] = true
	}
	var add []string
	for _, a := range keys {
		if a = strings.TrimSpace(a); !known[a] {
			known[a] = true
			add = append(add, a)
		}
	}
	if len(add) == 0 {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = io.WriteString(f, strings.Join(add, "\n")+"\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return add, nil
}
