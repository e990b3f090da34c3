package merkle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// Refusal is a checkpoint a witness would not co-sign.
type Refusal struct {
	CheckpointSeq uint64     // its sequence in CheckpointStream
	Checkpoint    Checkpoint // as signed
	Signer        string     // the checkpoint key's name
	// From and To bound the stream sequences where the checkpoint's log
	// and this host's first differ: From is one past the largest size
	// this host agreed on with that signer (1 when none), To the
	// checkpoint's size. From == To names the sequence.
	From, To uint64
	Reason   string // what differs, in a sentence
}

// Error returns the refusal as one line naming the checkpoint and the
// sequences.
func (r Refusal) Error() string {
	where := fmt.Sprintf("first differing sequence in %d..%d", r.From, r.To)
	if r.From == r.To {
		where = fmt.Sprintf("first differing sequence %d", r.From)
	}
	return fmt.Sprintf("witness: refused checkpoint %d (%s, size %d, signed by %s): %s; %s",
		r.CheckpointSeq, r.Checkpoint.Origin, r.Checkpoint.Size, r.Signer, r.Reason, where)
}

// WitnessState is what a witness keeps in its state file (JSON): the last
// checkpoint it co-signed and the refusals it made.
type WitnessState struct {
	Next      uint64      `json:"next"`      // the CheckpointStream sequence to read next
	Last      *Checkpoint `json:"last"`      // last co-signed; nil before the first
	Cosigned  int         `json:"cosigned"`  // checkpoints co-signed
	Refused   int         `json:"refused"`   // checkpoints refused
	Refusal   string      `json:"refusal"`   // the latest refusal, "" if none
	RefusedAt time.Time   `json:"refusedAt"` // when it was made
}

// ReadWitnessState reads a witness state file; a missing file is the
// zero state.
func ReadWitnessState(path string) (WitnessState, error) {
	var s WitnessState
	b, err := hookspool.ReadRegular(path, maxStateFile)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("witness state %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("witness state %s: %w", path, err)
	}
	return s, nil
}

// writeState replaces path with s (write, sync, rename).
func writeState(path string, s WitnessState) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("witness state %s: %w", path, err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("witness state %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("witness state %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("witness state %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// Witnesser checks each checkpoint published in CheckpointStream against
// a tree it builds itself from the stream it reads, and co-signs the
// consistent ones. A checkpoint signed by a key Keys does not list is
// skipped (it proves nothing); one of another origin, of a size this
// host's stream cannot reach (a hole), with another root at its size, or
// not consistent with the last checkpoint it co-signed is refused.
type Witnesser struct {
	Log     *natslog.Log
	JS      jetstream.JetStream
	Tree    *Tree
	Witness *Witness
	Keys    []note.Verifier // checkpoint keys it trusts
	Origin  string          // this host's stream's origin
	State   string          // path of the state file
	// Logf receives a line per co-signature and per refusal (nil: none).
	Logf func(format string, args ...any)
	// Refused, if not nil, is called with each refusal.
	Refused func(Refusal)
	// Cosigned, if not nil, is called after each cosignature is stored.
	Cosigned func(Checkpoint)
}

// witnessRetry is the pause before a witness reads the log again after a
// read failed.
const witnessRetry = 5 * time.Second

// Run witnesses until ctx is done (then it returns nil). Errors of the
// server or the state file end it.
func (w *Witnesser) Run(ctx context.Context) error {
	st, err := ReadWitnessState(w.State)
	if err != nil {
		return err
	}
	var (
		mu    sync.Mutex
		ready = make(chan struct{}) // closed and replaced when the tree grows or stops
		gap   error
		wg    sync.WaitGroup
	)
	fctx, stop := context.WithCancel(ctx)
	defer func() { stop(); wg.Wait() }()
	signal := func() {
		mu.Lock()
		close(ready)
		ready = make(chan struct{})
		mu.Unlock()
	}
	stopped := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(stopped)
		for {
			err := Extend(fctx, w.Log, w.Tree, true, func(int64) { signal() })
			if _, isGap := errors.AsType[*GapError](err); err == nil || isGap || fctx.Err() != nil {
				mu.Lock()
				gap = err
				mu.Unlock()
				signal()
				return
			}
			// A read that failed (no leader yet, a lost connection) is
			// no gap in the log: the tree goes on from where it stands
			// once the log answers, and no checkpoint is refused for it.
			if w.Logf != nil {
				w.Logf("WARN: witness: reading the log: %v; again in %s", err, witnessRetry)
			}
			select {
			case <-fctx.Done():
				signal()
				return
			case <-time.After(witnessRetry):
			}
		}
	}()
	// agreed is, per signer, the largest size this host found the same
	// root at: the start of a refusal's range.
	agreed := map[string]int64{}
	if st.Last != nil {
		agreed[""] = st.Last.Size
	}
	var rerr error
	Follow(ctx, w.JS, CheckpointSubject, st.Next, true, func(m Stored, err error) bool {
		if err != nil {
			rerr = err
			return false
		}
		st.Next = m.Seq + 1
		n, err := note.Open(m.Data, note.VerifierList(w.Keys...))
		if err != nil {
			if w.Logf != nil {
				w.Logf("witness: checkpoint %d skipped: %v", m.Seq, err)
			}
			rerr = w.save(&st)
			return rerr == nil
		}
		cp, err := ParseCheckpoint(n.Text)
		signer := n.Sigs[0].Name
		refuse := func(reason string, from, to int64) bool {
			r := Refusal{CheckpointSeq: m.Seq, Checkpoint: cp, Signer: signer, From: uint64(from), To: uint64(to), Reason: reason}
			st.Refused++
			st.Refusal, st.RefusedAt = r.Error(), time.Now().UTC()
			if rerr = w.save(&st); rerr != nil {
				return false
			}
			if w.Logf != nil {
				w.Logf("%s", r.Error())
			}
			if w.Refused != nil {
				w.Refused(r)
			}
			return true
		}
		if err != nil {
			return refuse(err.Error(), 1, 1)
		}
		from := max(agreed[signer], agreed[""]) + 1
		if cp.Origin != w.Origin {
			return refuse(fmt.Sprintf("its origin is not this host's stream (%s)", w.Origin), 1, max(cp.Size, 1))
		}
		// Wait for this host's stream to reach the checkpoint's size.
		for {
			mu.Lock()
			size, ch, g := w.Tree.Size(), ready, gap
			mu.Unlock()
			if size >= cp.Size {
				break
			}
			select {
			case <-stopped:
				if g == nil {
					return false // ctx done
				}
				return refuse(fmt.Sprintf("this host's stream cannot reach size %d: %v", cp.Size, g), size+1, size+1)
			case <-ch:
				continue
			case <-ctx.Done():
				return false
			}
		}
		own, err := w.Tree.Root(cp.Size)
		if err != nil {
			rerr = err
			return false
		}
		if own != cp.Root {
			return refuse(fmt.Sprintf("its root %s differs from this host's root %s of seq 1..%d", cp.Root, own, cp.Size), min(from, cp.Size), cp.Size)
		}
		if last := st.Last; last != nil && last.Origin == cp.Origin {
			if cp.Size < last.Size {
				if w.Logf != nil {
					w.Logf("witness: checkpoint %d (size %d) is older than the last co-signed (size %d): not co-signed again", m.Seq, cp.Size, last.Size)
				}
				rerr = w.save(&st)
				return rerr == nil
			}
			p, err := tlog.ProveTree(cp.Size, last.Size, w.Tree)
			if err == nil {
				err = tlog.CheckTree(p, cp.Size, cp.Root, last.Size, last.Root)
			}
			if err != nil {
				return refuse(fmt.Sprintf("not consistent with the last co-signed checkpoint (size %d, root %s): %v", last.Size, last.Root, err), last.Size+1, cp.Size)
			}
		}
		agreed[signer] = max(agreed[signer], cp.Size)
		cosigned, err := note.Sign(&note.Note{Text: n.Text}, w.Witness)
		if err != nil {
			rerr = err
			return false
		}
		if err := PublishCosignature(ctx, w.JS, w.Witness, m.Seq, cosigned); err != nil {
			rerr = err
			return false
		}
		st.Last = &cp
		st.Cosigned++
		if rerr = w.save(&st); rerr != nil {
			return false
		}
		if w.Logf != nil {
			w.Logf("witness: co-signed checkpoint %d (size %d)", m.Seq, cp.Size)
		}
		if w.Cosigned != nil {
			w.Cosigned(cp)
		}
		return true
	})
	if ctx.Err() != nil {
		return nil
	}
	return rerr
}

// save writes st to the state file.
func (w *Witnesser) save(st *WitnessState) error { return writeState(w.State, *st) }
