package natslog

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/logbook-dev/logbook/adapters/attestation"
)

// preverify starts checking, ahead of the read that judges them in
// order, the Ed25519 signatures of the events of seq from..end, which lie
// past j's statement (from > j.Through): on a goroutine of its own, with
// a Judger that takes up from j (ResumeJudger: the key events up to
// j.Through, each checked against j's tree), whose Verifier is a Sibling
// of the Log's and so shares its record of the signatures checked. It
// checks the first message of each long signed batch there with a get
// of it alone (hopBatches), then reads the events left once more and
// checks each batch of judgeBatch of them on GOMAXPROCS goroutines
// (attestation.Verifier.Precheck), only
// whether a signature verifies under the public key its Lb-Key names,
// for keys registered up to j.Through; events of other keys are left to
// the read. The read's own checks then take each verdict from the record
// (waiting for one under way) instead of verifying again: the events
// past the statement are verified while the read is still folding
// those it covers. Which key is valid at which sequence, roles and each
// aggregate's order are judged by the read alone, as without it. It
// holds at most judgeBatch messages; any error (ctx done, the server, a
// statement that does not hold) ends it silently, the read verifying
// what is left. The returned stop ends it and returns once every
// goroutine it started has returned; the caller calls it when the read
// ends. It needs the Log's Verifier.
func (l *Log) preverify(ctx context.Context, j *Judged, from, end uint64) (stop func()) {
	// The shared record of checks exists before the read checks
	// anything, so that no check the read makes first is made again.
	l.cfg.Verifier.Sibling()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		jr, err := l.ResumeJudger(ctx, l.cfg.Verifier.Admin(), j)
		if err != nil {
			return
		}
		if through, dropped := jr.Resumed(); dropped != "" || through != j.Through {
			return
		}
		prechecks(ctx, l, jr.v, from, end)
	}()
	return func() {
		cancel()
		<-done
	}
}

// preverifyMin is the fewest events past the statement a read
// pre-verifies: below it, the read's own checks, on the decode
// goroutines, start as soon as the pre-verifier's would.
const preverifyMin uint64 = 256

// prechecks checks with v the signatures of the events of l of seq
// from..end, judgeBatch at a time on GOMAXPROCS goroutines, until ctx
// is done or a read fails. It reads them as the read does (over a raw
// connection on a stream of one replica, each header block decoded
// here). Of the messages of one signed batch (the same Lb-Root and
// Lb-Batch-Sig) it checks the first only: that check verifies the
// batch's statement, whose verdict the shared record keeps, and the
// read, which checks each message's proof to the root itself, takes it
// from there; checking every message's proof here too cost as much as
// the read's own checks of them. A tail signed in long batches is not
// read at all: hopBatches checks the first message of each, and the
// stream is read from the first message it did not hop over; fewer
// than hopMin messages left there are got one by one (Log.getMsg), as
// hopBatches gets them: a read of a few messages starts a consumer, on
// a connection of its own, which costs the server and this process more
// than the gets (the last three messages of a log on an embedded server:
// 0.65 ms of CPU read, 0.1 ms got).
func prechecks(ctx context.Context, l *Log, v *attestation.Verifier, from, end uint64) {
	if from = hopBatches(ctx, l, v, from, end); from > end || ctx.Err() != nil {
		return
	}
	batch := make([]attestation.Message, 0, judgeBatch)
	flush := func() {
		workers := runtime.GOMAXPROCS(0)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := w; i < len(batch) && ctx.Err() == nil; i += workers {
					v.Precheck(batch[i])
				}
			})
		}
		wg.Wait()
		batch = batch[:0]
	}
	var (
		root, sig string    // the last batch statement taken
		rh        RawHeader // the message's judged headers, parsed in place
	)
	take := func(m Msg) bool {
		var am attestation.Message
		if m.hdr != nil && rh.Parse(m.hdr) {
			am = attestRaw(m.Seq, m.Subject, &rh, m.Data)
		} else {
			m = m.Decoded()
			am = attestMsg(m.Seq, m.Subject, m.Header, m.Data)
		}
		if am.Root != "" || am.BatchSig != "" {
			if am.Root == root && am.BatchSig == sig {
				return ctx.Err() == nil
			}
			root, sig = am.Root, am.BatchSig
		}
		batch = append(batch, am)
		if len(batch) == judgeBatch {
			flush()
		}
		return ctx.Err() == nil
	}
	if end-from+1 < hopMin {
		for seq := from; seq <= end && ctx.Err() == nil; seq++ {
			m, err := l.getMsg(ctx, seq, "")
			if err != nil || m.Sequence != seq {
				break // the read checks what is left
			}
			if isEvent(m.Subject) && !take(Msg{Seq: m.Sequence, Subject: m.Subject, Header: m.Header, Data: m.Data}) {
				break
			}
		}
	} else {
		read := l.consume
		if !l.leaderReads {
			read = l.consumeRaw
		}
		read(ctx, eventFilter, from, end, func(m Msg, err error) bool {
			return err == nil && take(m)
		})
	}
	if ctx.Err() == nil {
		flush()
	}
}

// hopMin is the fewest messages left of a signed batch, from the one at
// hand, that hopBatches hops over: fewer cost the server less to
// deliver than a get of one message does.
var hopMin uint64 = 16 // a variable for the tests of short batches

// hopBatches checks with v, from sequence from on, the first message of
// each signed batch, got alone (Log.getMsg), and hops over the rest of
// its batch, as long as what is left of each batch from there is at
// least hopMin messages: its other messages share its statement, whose
// verdict v's shared record then holds, and a tail signed in long
// batches is not delivered a second time to check a few of its
// messages. It returns the first sequence neither checked nor hopped
// over (end+1 when it reached end): that of a message that is not an
// event of such a batch, that the get did not answer, or where ctx
// ended. Its hops follow the batch headers as stored, unchecked: a
// message hopped over is verified by the read as any other is.
func hopBatches(ctx context.Context, l *Log, v *attestation.Verifier, from, end uint64) uint64 {
	seq := from
	for seq <= end && ctx.Err() == nil {
		m, err := l.getMsg(ctx, seq, "")
		if err != nil || m.Sequence != seq || !isEvent(m.Subject) {
			return seq
		}
		am := attestMsg(m.Sequence, m.Subject, m.Header, m.Data)
		left, ok := batchLeft(am.Batch)
		if !ok || left < hopMin {
			return seq
		}
		v.Precheck(am)
		seq += left
	}
	return seq
}

// batchLeft returns how many messages of its batch a message whose
// Lb-Batch header is b ("<index>/<n>") is followed by, itself included
// (n - index), and false when b is not that.
func batchLeft(b string) (uint64, bool) {
	is, ns, ok := strings.Cut(b, "/")
	i, err1 := strconv.ParseUint(is, 10, 32)
	n, err2 := strconv.ParseUint(ns, 10, 32)
	if !ok || err1 != nil || err2 != nil || i >= n || n > attestation.MaxBatchLeaves {
		return 0, false
	}
	return n - i, true
}
