package merkle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/mod/sumdb/note"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Defaults of Checkpointer.
const (
	DefaultEvery    = 1000
	DefaultInterval = 10 * time.Second
)

// Checkpointer keeps a Tree over the log as it grows and publishes a
// signed checkpoint every Every messages or every Interval, whichever
// comes first, whenever the tree grew since the last one. The tree's
// hashes are synced to disk before a checkpoint of them is signed.
type Checkpointer struct {
	Log      *natslog.Log
	JS       jetstream.JetStream // publishes to CheckpointStream
	Tree     *Tree
	Signer   note.Signer
	Origin   string        // see Origin
	Every    int64         // messages; 0 means DefaultEvery
	Interval time.Duration // 0 means DefaultInterval
	// Logf, if not nil, is told of a checkpoint that could not be
	// published (tried again at the next tick).
	Logf func(format string, args ...any)
	// Published, if not nil, is called after each checkpoint is stored.
	Published func(c Checkpoint, seq uint64)
	// Judge, if not nil, judges the log's events as a reader from its
	// start does (every signature, key and role): after each checkpoint
	// it is brought up to the checkpoint's size and a Judgment of that
	// size, signed by Signer, is published bound to it (none when it
	// quarantined more than MaxJudged events).
	Judge *natslog.Judger
	// Judged, if not nil, is called after each judgment is stored.
	Judged func(j Judgment, seq uint64)
	// Hole, if not nil, says whether a hole in the log was found
	// elsewhere (serve's walk of the whole stream, which finds a message
	// lost in place below the tree's end, where the tree's follower
	// never reads again): a *GapError, which stops Run as one the
	// follower met does, or nil. It is asked before each checkpoint.
	Hole func() *GapError

	published atomic.Int64 // size of the last checkpoint published; 0 before
}

// Once brings the tree up to the log's end and publishes a checkpoint of
// it (even of a size already published); it returns the checkpoint and
// its sequence in CheckpointStream. A sequence missing from the stream is
// a *GapError, and nothing is signed.
func (c *Checkpointer) Once(ctx context.Context) (Checkpoint, uint64, error) {
	if err := Extend(ctx, c.Log, c.Tree, false, nil); err != nil {
		return Checkpoint{}, 0, fmt.Errorf("checkpoint: %w", err)
	}
	return c.publish(ctx)
}

// publish syncs the tree and publishes a checkpoint of its size now.
func (c *Checkpointer) publish(ctx context.Context) (Checkpoint, uint64, error) {
	if c.Hole != nil {
		if gap := c.Hole(); gap != nil {
			return Checkpoint{}, 0, gap
		}
	}
	n := c.Tree.Size()
	if n == 0 {
		return Checkpoint{}, 0, nil
	}
	if err := c.Tree.Sync(); err != nil {
		return Checkpoint{}, 0, err
	}
	root, err := c.Tree.Root(n)
	if err != nil {
		return Checkpoint{}, 0, err
	}
	cp := Checkpoint{Origin: c.Origin, Size: n, Root: root}
	signed, err := cp.Sign(c.Signer)
	if err != nil {
		return Checkpoint{}, 0, err
	}
	seq, err := PublishCheckpoint(ctx, c.JS, signed)
	if err != nil {
		return Checkpoint{}, 0, err
	}
	c.published.Store(n)
	if c.Published != nil {
		c.Published(cp, seq)
	}
	if err := c.judge(ctx, cp, seq); err != nil {
		return cp, seq, err
	}
	return cp, seq, nil
}

// judge brings c.Judge up to cp's size and publishes the judgment of
// it, bound to cp at seq in CheckpointStream.
func (c *Checkpointer) judge(ctx context.Context, cp Checkpoint, seq uint64) error {
	if c.Judge == nil {
		return nil
	}
	if err := c.Judge.CatchUp(ctx, uint64(cp.Size)); err != nil {
		if me, ok := errors.AsType[*natslog.MissingError](err); ok {
			// A hole the judge meets: what the tree's follower says of
			// one (Run stops), not a failure to try again.
			return &GapError{Seq: me.Seq, Next: me.Next}
		}
		return fmt.Errorf("judgment of checkpoint %d: %w", seq, err)
	}
	q := c.Judge.Quarantined()
	if len(q) > MaxJudged {
		return nil
	}
	j := Judgment{Checkpoint: cp, Quarantined: q}
	signed, err := j.Sign(c.Signer)
	if err != nil {
		return err
	}
	if err := PublishJudgment(ctx, c.JS, seq, signed); err != nil {
		return err
	}
	if c.Judged != nil {
		c.Judged(j, seq)
	}
	return nil
}

// Cadence returns the Every and Interval Run uses: Every messages
// (DefaultEvery when 0 or less) and Interval (DefaultInterval when 0 or
// less).
func (c *Checkpointer) Cadence() (every int64, interval time.Duration) {
	every, interval = c.Every, c.Interval
	if every <= 0 {
		every = DefaultEvery
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	return every, interval
}

// Run builds the tree up to the log's end and keeps it up to date until
// ctx is done (then it returns nil, after a last checkpoint if the tree
// grew). A sequence missing from the stream, met by the tree's follower
// or by the judgment of a checkpoint (Judge), stops it with a *GapError:
// no checkpoint is ever signed over a log with a hole.
func (c *Checkpointer) Run(ctx context.Context) error {
	every, interval := c.Cadence()
	publish := func(ctx context.Context) error {
		if c.Tree.Size() == c.published.Load() {
			return nil
		}
		_, _, err := c.publish(ctx)
		return err
	}
	published := &c.published
	grew := make(chan struct{}, 1)
	var (
		wg   sync.WaitGroup
		ferr error
	)
	fctx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		ferr = Extend(fctx, c.Log, c.Tree, true, func(n int64) {
			if n-max(published.Load(), 0) >= every {
				select {
				case grew <- struct{}{}:
				default:
				}
			}
		})
	}()
	t := time.NewTicker(interval)
	defer t.Stop()
	// failed: the last publish failed; the tree's growth no longer
	// makes it try again at once (a full disk made every message a
	// failed try and a line in serve's log), the ticker does.
	failed := false
	for {
		select {
		case <-ctx.Done():
			// A last checkpoint of what was taken in, if the server still
			// answers.
			pctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			<-done
			if ferr == nil {
				_ = publish(pctx)
			}
			return nil
		case <-done:
			if ferr != nil {
				return fmt.Errorf("checkpoints: %w", ferr)
			}
			return nil
		case <-grew:
			if failed {
				continue
			}
		case <-t.C:
		}
		err := publish(ctx)
		if _, ok := errors.AsType[*GapError](err); ok {
			return fmt.Errorf("checkpoints: %w", err)
		}
		failed = err != nil
		if err != nil && ctx.Err() == nil && c.Logf != nil {
			// The server may be electing a leader, the disk may be full:
			// the next tick tries again.
			c.Logf("WARN: checkpoint: %v; again in %s", err, interval)
		}
	}
}
