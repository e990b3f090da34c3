package natslog

import (
	"context"
	"runtime"
	"sync"

	"github.com/logbook-dev/logbook/adapters/attestation"
)

// preverify starts checking, ahead of the read that judges them in
// order, the Ed25519 signatures of the events of seq from..end, which lie
// past j's statement (from > j.Through): on a goroutine of its own, with
// a Judger that takes up from j (ResumeJudger: the key events up to
// j.Through, each checked against j's tree), whose Verifier is a Sibling
// of the Log's and so shares its record of the signatures checked. It
// reads those events once more and checks each batch of judgeBatch of
// them on GOMAXPROCS goroutines (attestation.Verifier.Precheck), only
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
var preverifyMin uint64 = 256 // a variable for the test that pre-verifies a short tail

// prechecks checks with v the signatures of the events of l of seq
// from..end, judgeBatch at a time on GOMAXPROCS goroutines, until ctx
// is done or a read fails. It reads them as the read does (over a raw
// connection on a stream of one replica, each header block decoded
// here). Of the messages of one signed batch (the same Lb-Root and
// Lb-Batch-Sig) it checks the first only: that check verifies the
// batch's statement, whose verdict the shared record keeps, and the
// read, which checks each message's proof to the root itself, takes it
// from there; checking every message's proof here too cost as much as
// the read's own checks of them.
func prechecks(ctx context.Context, l *Log, v *attestation.Verifier, from, end uint64) {
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
	read := l.consume
	if !l.leaderReads {
		read = l.consumeRaw
	}
	var (
		root, sig string    // the last batch statement taken
		rh        RawHeader // the message's judged headers, parsed in place
	)
	read(ctx, eventFilter, from, end, func(m Msg, err error) bool {
		if err != nil {
			return false
		}
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
	})
	if ctx.Err() == nil {
		flush()
	}
}

// noPreverify turns preverify off, for tests that compare a read with
// it to one without.
var noPreverify = false
