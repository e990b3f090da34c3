package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/merkle"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

func verifyCmd(g *globals) *cobra.Command {
	var (
		seq uint64
		id  string
	)
	cmd := &cobra.Command{
		Use:   "verify [--seq N | --id ULID]",
		Short: "Check the stored log against its witnessed checkpoints and the hashes stored as it was appended",
		Long: `verify recomputes the Merkle tree of the LOGBOOK stream from every stored
message (leaf format logbook-leaf/v1), compares each leaf with the hash
serve stored when the message was appended (the data dir's merkle folder),
and checks every checkpoint in LOGBOOK_CHECKPOINTS signed by a trusted key
(this data dir's and those pinned with ` + "`logbook checkpoint trust`" + `): its
root against the stored log at its size, its witnesses' cosignatures, and
its consistency with the other checkpoints.

With --seq N or --id ULID it also prints the inclusion proof of that
message in a checkpoint that covers it; for an event the log's reads
leave out of every fold (found by --id even when it does not decode), also
that it is quarantined and why.

It also judges every event as the log's reads do, and says how many the
reads leave out of every fold as unattested (unsigned, out of their key's
role, replayed, …) and the first of them.

It exits 0 when everything agrees and no event is unattested, 1 naming
the first sequence where the stored log and a checkpoint or the stored
hashes disagree, 1 naming the first unattested event, 1 saying
nothing was proven when there was nothing to compare the recomputed tree
with (no stored hashes and no trusted checkpoint: a log only imported, or
a follower's before ` + "`logbook checkpoint trust`" + `), 2 on a usage error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("seq") && seq == 0 {
				return usageErrorf("--seq 0: stream sequences begin at 1")
			}
			if seq > 0 && id != "" {
				return usageErrorf("--seq and --id: give one")
			}
			var want ulid.ULID
			if id != "" || cmd.Flags().Changed("id") {
				var err error
				if want, err = ulid.ParseStrict(id); err != nil {
					return usageErrorf("--id %q: not an event id: an event id is a ULID, 26 characters of Crockford's base32 (0-9 and A-Z but I, L, O and U; e.g. 01JDQ3Z8X4M5N6P7Q8R9S0T1V2), as `logbook events tail --json` prints it", id)
				}
				if want == (ulid.ULID{}) {
					// runVerify takes the zero ULID for no --id.
					return usageErrorf("--id %s: the zero ULID names no event (an event id holds the time it was made)", id)
				}
			}
			if err := natslog.NameUnavailable(runVerify(cmd.Context(), g, seq, want)); err != nil {
				return verifyError{err}
			}
			return nil
		},
	}
	cmd.Flags().Uint64Var(&seq, "seq", 0, "print the inclusion proof of the message at this stream sequence")
	cmd.Flags().StringVar(&id, "id", "", "print the inclusion proof of the event with this ULID")
	logWaitFlag(cmd, g)
	return markReads(cmd)
}

// verifyError is an error of verify as verify says it: a read's error
// that advises running verify (natslog.VerifyHint) is said without that
// advice. Unwrap returns the error itself, for its exit code.
type verifyError struct{ err error }

// Error returns the error's text without natslog.VerifyHint.
func (e verifyError) Error() string { return withoutVerifyAdvice(e.err.Error()) }

// withoutVerifyAdvice returns s without the advice to run verify that
// reads and reasons give (natslog.VerifyHint, attestation.VerifyAdvice).
func withoutVerifyAdvice(s string) string {
	s = strings.ReplaceAll(s, natslog.VerifyHint, "")
	return strings.ReplaceAll(s, "; "+attestation.VerifyAdvice, "")
}

// Unwrap returns the error.
func (e verifyError) Unwrap() error { return e.err }

func runVerify(ctx context.Context, g *globals, seq uint64, id ulid.ULID) error {
	b, err := openVerify(ctx, g)
	if err != nil {
		return err
	}
	defer b.Close()
	js, err := jetstream.New(b.nc)
	if err != nil {
		return err
	}
	// A sequence past the log's end is the caller's mistake, as for
	// replay --seq and events tail --from: a usage error.
	if seq > 0 {
		if err := replay.CheckSeq(ctx, b.log, seq); err != nil {
			if _, ok := errors.AsType[*replay.SeqError](err); ok {
				return usageErrorf("%w", err)
			}
			return err
		}
	}
	keys, err := merkle.LoadKeys(string(b.dd))
	if err != nil {
		return err
	}
	stored, err := merkle.StoredTrees(string(b.dd))
	if err != nil {
		return err
	}
	rep, err := merkle.Verify(ctx, b.log, js, keys, stored)
	if err != nil {
		return err
	}
	if id != (ulid.ULID{}) {
		var found bool
		if seq, found, err = b.log.FindEvent(ctx, b.reg, id); err != nil {
			return err
		} else if !found {
			return &exitError{codeError, fmt.Errorf("verify: --id %s: no such event in the log", id)}
		}
	}
	// Every event the log's reads leave out of every fold: a log that
	// holds forged or damaged entries is not ok, whatever its tree says.
	// An event every fold leaves out is stored all the same: its proof
	// is made as for any other, and why it is left out said (the same
	// read, which passes seq).
	qn, qfirst, note, err := unattestedIn(ctx, g, b, js, seq)
	if err != nil {
		return err
	}
	// A signed log read unjudged may hold what it cannot tell: not ok.
	unjudged, err := signedUnjudged(ctx, g, b)
	if err != nil {
		return err
	}
	var inc *merkle.Inclusion
	var incErr error
	if seq > 0 {
		var i merkle.Inclusion
		if i, incErr = rep.Prove(seq); incErr == nil {
			inc = &i
		}
	}
	if g.json {
		ok := rep.Failure() == nil && incErr == nil && rep.NothingProven() == nil && qn == 0 && unjudged == 0
		if err := writeJSON(g.stdout, verifyJSON{ok, rep.JSON(inc), note, qn, qfirst, unjudged}); err != nil {
			return err
		}
	} else {
		if err := term.Verify(g.stdout, rep, inc, b.dd.path(merkle.TreeDir)); err != nil {
			return err
		}
		if note != nil {
			what := "the event message"
			if id != (ulid.ULID{}) {
				what = "event " + id.String()
			}
			if _, err := fmt.Fprintf(g.stdout, "seq %d: %s is in the log but QUARANTINED (%s: %s): every fold leaves it out\n",
				note.Seq, what, note.Status, term.Field(note.Why)); err != nil {
				return err
			}
		}
	}
	var unattestedErr error
	if qn > 0 {
		unattestedErr = fmt.Errorf("verify: the log holds %s, left out of every fold: the first at seq %d (%s on %s: %s); `logbook audit` shows them",
			term.Plural(int(qn), "unattested event"), qfirst.Seq, term.Field(qfirst.Type), term.Field(qfirst.Subject), term.Field(qfirst.Status))
		if !g.json {
			if _, err := fmt.Fprintf(g.stdout, "NOT OK: %s in the log unattested (quarantined: left out of every fold), the first at seq %d: %s on %s, %s: %s; `logbook audit` shows them\n",
				term.Plural(int(qn), "event is", "events are"), qfirst.Seq, term.Field(qfirst.Type), term.Field(qfirst.Subject), term.Field(qfirst.Status), term.Field(withoutVerifyAdvice(qfirst.Why))); err != nil {
				return err
			}
		}
	}
	if unjudged > 0 && !g.json {
		if _, err := fmt.Fprintln(g.stdout, term.Unjudged(unjudged)); err != nil {
			return err
		}
	}
	if err := rep.Failure(); err != nil {
		return &exitError{codeError, err}
	}
	if incErr != nil {
		return &exitError{codeError, fmt.Errorf("verify: %w", incErr)}
	}
	if !g.json {
		var line bytes.Buffer
		if err := term.VerifyOK(&line, rep); err != nil {
			return err
		}
		out := line.Bytes()
		if qn > 0 || unjudged > 0 {
			// The tree agrees; the log is not ok all the same.
			out = bytes.TrimPrefix(out, []byte("ok: "))
		}
		if _, err := g.stdout.Write(out); err != nil {
			return err
		}
	}
	if err := rep.NothingProven(); err != nil {
		return &exitError{codeError, err}
	}
	if unattestedErr != nil {
		return &exitError{codeError, unattestedErr}
	}
	if unjudged > 0 {
		return &exitError{codeError, fmt.Errorf("verify: the log is signed since seq %d and this host reads it unjudged: pin its admin key (`logbook keys pin`)", unjudged)}
	}
	return nil
}

// signedUnjudged returns the sequence of the log's signing.began when
// b's log is signed and this host reads it unjudged (no admin key
// pinned), 0 otherwise (natslog.Log.SignedUnjudged).
func signedUnjudged(ctx context.Context, g *globals, b *backend) (uint64, error) {
	l, judged, err := readerLog(ctx, g, b)
	if err != nil || judged {
		return 0, err
	}
	defer l.Close()
	return l.SignedUnjudged(ctx)
}

// unattestedIn reads the whole of b's log once, as a reading command
// does (judged by the data dir's admin key, its own on its own server,
// its pin on a cluster's, through serve's fast path where it holds; with
// no pin unjudged, where only a message that does not decode is left
// out), and returns how many events every fold leaves out, the first of
// them by sequence (nil when none), and, for seq > 0, why the reads leave
// the event message at seq out of every fold (nil when they fold it).
func unattestedIn(ctx context.Context, g *globals, b *backend, js jetstream.JetStream, seq uint64) (uint64, *replay.Unattested, *quarantineNote, error) {
	l, judged, err := readerLog(ctx, g, b)
	if err != nil {
		return 0, nil, nil, err
	}
	defer l.Close()
	var note *quarantineNote
	if !judged {
		d := b.reg.NewDecoder()
		var (
			n     uint64
			first *replay.Unattested
		)
		for m, err := range l.ReadRaw(ctx, events.SubjectEvents+".>", 1) {
			if err != nil {
				return 0, nil, nil, err
			}
			if _, err := d.Decode(m.Data); err != nil {
				if n++; first == nil {
					first = &replay.Unattested{Seq: m.Seq, Subject: m.Subject, Status: "undecodable", Why: err.Error()}
				}
				if m.Seq == seq {
					note = &quarantineNote{Seq: seq, Status: "undecodable", Why: err.Error()}
				}
			}
		}
		return n, first, note, nil
	}
	_, _ = merkle.UseFastPath(ctx, l, js, string(b.dd))
	for r, err := range l.Read(events.WithQuarantined(ctx), 1) {
		if err != nil {
			return 0, nil, nil, fmt.Errorf("verify: reading the log for unattested events: %w", err)
		}
		if seq > 0 && r.Seq == seq && r.Quarantined {
			note = quarantinedAt(l, r)
		}
	}
	us := unattested(l, "")
	_, n := l.Quarantined()
	if n == 0 || len(us) == 0 {
		return 0, nil, note, nil
	}
	return n, &us[0], note, nil
}

// verifyJSON is what `logbook verify --json` prints: the overall
// verdict, the report, and for the message of --seq or --id, when the
// reads quarantine it, why.
type verifyJSON struct {
	// OK is true exactly when verify exits 0: the tree agrees with
	// everything it was compared with, something was proven, the asked
	// proof was made, no event is unattested, and a signed log was
	// judged.
	OK bool `json:"ok"`
	merkle.ReportJSON
	Quarantined *quarantineNote `json:"quarantined,omitempty"`
	// Unattested counts the events every fold of the log leaves out,
	// FirstUnattested is the first of them by sequence.
	Unattested      uint64             `json:"unattested"`
	FirstUnattested *replay.Unattested `json:"first_unattested,omitempty"`
	// SignedUnjudged is the sequence of the log's signing.began when the
	// log is signed and this host pins no admin key (it reads the log
	// unjudged), 0 otherwise; any makes OK false.
	SignedUnjudged uint64 `json:"signed_unjudged,omitempty"`
}

// quarantineNote says why the log's reads leave the stored event message
// at Seq out of every fold: Status is the verifier's (unsigned,
// out-of-role, follows-missing, …) or "undecodable", Why in words.
type quarantineNote struct {
	Seq    uint64 `json:"seq"`
	Status string `json:"status"`
	Why    string `json:"why"`
}

// quarantinedAt returns why l's reads leave r, a record they marked
// quarantined, out of every fold: the verdict l remembers of its
// sequence, or r's signer status when l remembers none (past the first
// 10,000).
func quarantinedAt(l *natslog.Log, r events.Record) *quarantineNote {
	qs, _ := l.Quarantined()
	for _, q := range qs {
		if q.Seq == r.Seq {
			return &quarantineNote{Seq: r.Seq, Status: string(q.Verdict.Status), Why: q.Verdict.Why}
		}
	}
	return &quarantineNote{Seq: r.Seq, Status: cmp.Or(r.Signer.Status, "quarantined"), Why: "the log's reads leave it out"}
}

// readerLog opens b's log as a reading command does: judged by the data
// dir's pin of the admin key (its own server's or a cluster's), or, with
// no pin, unjudged (judged false): a reader never makes the admin key,
// which would judge a log signed under a lost one as never signed.
// Close it when done.
func readerLog(ctx context.Context, g *globals, b *backend) (*natslog.Log, bool, error) {
	cfg, _, err := b.dd.dir().ClusterAttestConfig(natslog.Config{Registry: events.NewRegistry()})
	if err != nil {
		return nil, false, err
	}
	l, err := host.OpenLogWithin(ctx, b.nc, cfg, g.logWait)
	if err != nil {
		return nil, false, err
	}
	return l, cfg.Verifier != nil, nil
}

// openVerify reaches the log as openBackend does, but on the data dir's
// own files without checking the projection against the log first: a
// log that lost messages is what verify is for. A system socket is
// refused as openBackend refuses it (refuseSocket).
func openVerify(ctx context.Context, g *globals) (*backend, error) {
	if err := refuseSocket(g); err != nil {
		return nil, err
	}
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return nil, err
	}
	if g.natsURL == "" && g.credsPath == "" && !dd.dir().HasData() {
		return nil, dd.dir().NoDataError()
	}
	b := &backend{dd: dd, reg: events.NewRegistry()}
	if url, opts, ok := dd.dir().ServerURL(g.reach()); ok {
		nc, err := natslog.Connect(url, append(opts, nats.Timeout(2*time.Second))...)
		if err == nil {
			b.nc, b.remote = nc, true
		} else if g.natsURL != "" || g.credsPath != "" {
			return nil, g.reach().ConnectError(url, err)
		}
	}
	if !b.remote {
		lock, err := dd.lock("logbook verify" + datadir.ReaderMark)
		if err != nil {
			return nil, err
		}
		if err := b.startLocal(ctx, lock); err != nil {
			return nil, err
		}
	}
	l, err := host.OpenLogWithin(ctx, b.nc, natslog.Config{Registry: b.reg}, g.logWait)
	if err != nil {
		b.Close()
		return nil, err
	}
	b.log = l
	return b, nil
}
