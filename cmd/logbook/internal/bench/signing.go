package bench

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/merkle"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// The signing group's floors: what signing the log may cost, each
// measured against the same path unsigned in the same run.
const (
	// SigningAppendFloor is the least ratio of signed to unsigned append
	// throughput.
	SigningAppendFloor = 0.90
	// SigningFoldFloor is the least ratio of a replay fold that verifies
	// (on the fast path of serve's judgment statement) to one that does
	// not.
	SigningFoldFloor = 0.80
	// SigningHookMaxMs is the most, in milliseconds, a hook's p50 may
	// grow when serve signs.
	SigningHookMaxMs = 1.0
)

// signingWriters is how many writers the signing group's append row
// runs: eight, each appending one-event decisions as a hook's do,
// fsync always (serve's default), so that the server's group commit
// merges decisions and a cost per message (the signature) shows in the
// throughput, which one writer waiting on each fsync would hide, while
// the committer is not yet the bottleneck it is at 64.
const signingWriters = 8

// signingState holds the signing rows' servers and logs, each started
// on first use.
type signingState struct {
	append *benchLog    // the append row's server; its log appends unsigned
	signed *natslog.Log // on the same server: judged, and signing with a registered serve key
	bare   *natslog.Log // on the same server: signing with that key, not judged

	fold      *benchLog         // the fold row's signed log
	foldDir   string            // its data dir: checkpoint key and stored tree hashes
	foldAdmin ed25519.PublicKey // the admin key the fold's readers pin
	foldN     int               // events every fold of it folds
	foldNoted bool              // the verified fold's Ed25519 count is in the notes

	signedServe, plainServe *benchServe // the hook row's serves

	// appendCPU holds, per way of appending, the µs of this process's
	// CPU per event of each append sample (see signingAppend).
	appendCPU map[appendSigning][]float64
}

func (s *signingState) close() {
	for _, srv := range []*benchServe{s.signedServe, s.plainServe} {
		if srv != nil {
			srv.close()
		}
	}
	for _, l := range []*natslog.Log{s.signed, s.bare} {
		if l != nil {
			l.Close()
		}
	}
	for _, l := range []*benchLog{s.append, s.fold} {
		if l != nil {
			l.close()
		}
	}
}

func (e *benchEnv) signingOf() *signingState {
	if e.signing == nil {
		e.signing = &signingState{}
	}
	return e.signing
}

// signingRows are the signing group's rows, each signed path beside its
// unsigned twin on the same kind of server, run readRuns times in turn.
func (e *benchEnv) signingRows() []benchWorkload {
	ws := []benchWorkload{{
		group: "signing", name: fmt.Sprintf("append %d writers × 1 ev/decision, fsync always, signed", signingWriters), unit: "ev",
		logbook: e.signingAppend(signedChecked), runs: readRuns,
		baselines: []benchBaseline{
			{name: "the same decisions unsigned (no verifier, no key), same server", run: e.signingAppend(unsigned), floor: SigningAppendFloor},
			{name: "the same decisions signed, key state not checked (the signature's share)", run: e.signingAppend(signedOnly)},
		},
	}}
	if e.cli.HookExe != "" && e.cli.RunUnsigned != nil {
		ws = append(ws, benchWorkload{
			group: "signing", name: "logbook-hook claude → serve signing, fsync always", unit: "hook",
			logbook: e.hookRunOn(e.signingServe(true), e.cli.HookExe, "logbook-hook", "claude"), runs: readRuns,
			baselines: []benchBaseline{{name: "the same hooks → serve not signing (no key, no signing.began)", run: e.hookRunOn(e.signingServe(false), e.cli.HookExe, "logbook-hook", "claude")}},
			vs:        hookP50Delta,
		})
	}
	return append(ws, benchWorkload{
		group: "signing", name: "replay fold into memory, verified (fast path of serve's statement)", unit: "ev",
		logbook: e.signingFold(true), runs: readRuns,
		baselines: []benchBaseline{{name: "the same fold, not verified", run: e.signingFold(false), floor: SigningFoldFloor}},
	})
}

// signingAppendLog returns the append row's server, starting it on
// first use: signing began on its log and a serve key is registered,
// signed by an admin key made for the run, as serve does on its own
// server.
func (e *benchEnv) signingAppendLog(ctx context.Context) (*signingState, error) {
	st := e.signingOf()
	if st.append != nil {
		return st, nil
	}
	l, err := e.startLog(ctx, "signing-append", natslog.FsyncAlways)
	if err != nil {
		return nil, err
	}
	st.append = l
	var key *attestation.Key
	if st.signed, _, key, err = e.openSigning(ctx, l); err != nil {
		return nil, err
	}
	if st.bare, err = natslog.Open(ctx, l.srv.Conn(), natslog.Config{Registry: e.reg}); err != nil {
		return nil, err
	}
	st.bare.SetSigner(key)
	return st, nil
}

// openSigning opens a log on l's server that judges its reads against
// a new admin key, begins signing with it, registers a new serve key and
// signs with it, as serve on its own server does; it returns the log and
// the admin public key and the serve key.
func (e *benchEnv) openSigning(ctx context.Context, l *benchLog) (*natslog.Log, ed25519.PublicKey, *attestation.Key, error) {
	admin, err := attestation.NewKey("admin@bench", attestation.RoleAdmin)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := attestation.NewKey("serve@bench", attestation.RoleServe)
	if err != nil {
		return nil, nil, nil, err
	}
	sl, err := natslog.Open(ctx, l.srv.Conn(), natslog.Config{Registry: e.reg, Verifier: attestation.NewVerifier(admin.Public())})
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := sl.BeginSigning(ctx, admin, "bench", time.Now()); err != nil {
		sl.Close()
		return nil, nil, nil, fmt.Errorf("begin signing: %w", err)
	}
	if _, err := sl.RegisterKey(ctx, admin, key, "bench", time.Now()); err != nil {
		sl.Close()
		return nil, nil, nil, fmt.Errorf("register the serve key: %w", err)
	}
	sl.SetSigner(key)
	return sl, admin.Public(), key, nil
}

// appendSigning is how the signing group's append row appends.
type appendSigning int

const (
	unsigned      appendSigning = iota // neither signed nor judged: the append rows' log
	signedChecked                      // signed, the key's state checked before each commit: serve's log
	signedOnly                         // signed, no key state checked: the signature alone
)

// signingAppend appends cfg.Appends events, one per decision, from
// signingWriters writers, each decision chained to its writer's previous
// one, through the log of the same server how says.
func (e *benchEnv) signingAppend(how appendSigning) benchRun {
	return func(ctx context.Context) (benchSample, error) {
		st, err := e.signingAppendLog(ctx)
		if err != nil {
			return benchSample{}, err
		}
		log := map[appendSigning]*natslog.Log{unsigned: st.append.log, signedChecked: st.signed, signedOnly: st.bare}[how]
		run := e.runs.Add(1)
		cpu0 := processCPU()
		sample, err := benchWriters(signingWriters, max(e.cfg.Appends, signingWriters), 1, func(w int) func() error {
			agg := events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("bench-%d-w%d", run, w)}
			var last, ver uint64
			return func() error {
				ap, err := log.Append(ctx, e.decision(agg, last, ver+1, 1))
				last, ver = ap.Last, ver+1
				return err
			}
		})
		if err == nil && sample.ops > 0 {
			st.noteAppendCPU(e, how, float64((processCPU()-cpu0).Microseconds())/float64(sample.ops))
		}
		return sample, err
	}
}

// noteAppendCPU keeps cpu, the µs of CPU per event of one append sample
// appended how, and once every way has readRuns of them notes their
// medians: what signing costs per event whatever else the machine runs,
// which stretches wall time (the rows' ratios) far more than CPU time.
func (st *signingState) noteAppendCPU(e *benchEnv, how appendSigning, cpu float64) {
	if st.appendCPU == nil {
		st.appendCPU = map[appendSigning][]float64{}
	}
	st.appendCPU[how] = append(st.appendCPU[how], cpu)
	med := map[appendSigning]float64{}
	for _, h := range []appendSigning{unsigned, signedOnly, signedChecked} {
		xs := slices.Clone(st.appendCPU[h])
		if len(xs) < readRuns {
			return
		}
		if len(xs) > readRuns {
			return // noted already
		}
		slices.Sort(xs)
		med[h] = xs[(len(xs)-1)/2]
	}
	e.notes = append(e.notes, fmt.Sprintf("signing append rows: %.0f µs of CPU per event unsigned, %.0f signed (key state not checked), %.0f signed and checked (this process: writers, log and server; medians of %d runs)",
		med[unsigned], med[signedOnly], med[signedChecked], readRuns))
}

// signingServe returns the hook row's serve that signs (as every serve
// on its own server does) or its twin that does not (CLI.RunUnsigned),
// each on a data dir of its own, fsync always, started on first use.
func (e *benchEnv) signingServe(signed bool) func(context.Context) (*benchServe, error) {
	return func(ctx context.Context) (*benchServe, error) {
		st := e.signingOf()
		p, run, name := &st.plainServe, e.cli.RunUnsigned, "serve-unsigned"
		if signed {
			p, run, name = &st.signedServe, e.cli.Run, "serve-signed"
		}
		if *p != nil {
			return *p, nil
		}
		s, err := e.startServeWith(ctx, run, filepath.Join(e.dir, name), "always")
		if err != nil {
			return nil, err
		}
		*p = s
		// The twins are what they say: a serve that signs has registered
		// its key on its log; one that does not has no key event there.
		keys := 0
		for _, err := range s.log.ReadRaw(ctx, events.SubjectEvents+"."+events.KindKey+".>", 1) {
			if err != nil {
				return nil, err
			}
			keys++
		}
		if signed != (keys > 0) {
			return nil, fmt.Errorf("serve on %s (signing: %v) has %d key events on its log", s.data, signed, keys)
		}
		return s, nil
	}
}

// hookP50Delta holds the signing serve's hook p50 to at most
// SigningHookMaxMs above the unsigned serve's: the median, over the
// runs, of each run's p50 difference (each pair ran back to back).
func hookP50Delta(signed, plain []benchSample) *Check {
	var ds []float64
	for i := range min(len(signed), len(plain)) {
		ds = append(ds, p50ms(signed[i].lat)-p50ms(plain[i].lat))
	}
	if len(ds) == 0 {
		return &Check{Text: fmt.Sprintf("Δp50 ≤+%gms: no runs", SigningHookMaxMs)}
	}
	slices.Sort(ds)
	d := ds[(len(ds)-1)/2]
	return &Check{Text: fmt.Sprintf("Δp50 %+.2fms ≤+%gms", d, SigningHookMaxMs), OK: d <= SigningHookMaxMs}
}

// p50ms returns the median of lat in milliseconds (the lower middle one
// of an even number; 0 for none).
func p50ms(lat []time.Duration) float64 {
	if len(lat) == 0 {
		return 0
	}
	lat = slices.Clone(lat)
	slices.Sort(lat)
	return float64(lat[(len(lat)-1)/2].Microseconds()) / 1000
}

// signingFoldLog returns the fold row's server, writing its log on first
// use: signing begun and a serve key registered, then about cfg.Events
// events of the read rows' history signed by that key, a checkpoint and
// serve's judgment statement of all of it (merkle.Checkpointer with a
// Judger, its tree stored and its key kept in a data dir, as serve
// writes them), then foldPast more events of the same history past the
// statement, as a live log has.
func (e *benchEnv) signingFoldLog(ctx context.Context) (*signingState, error) {
	st := e.signingOf()
	if st.fold != nil {
		return st, nil
	}
	l, err := e.startLog(ctx, "signing-fold", natslog.FsyncInterval)
	if err != nil {
		return nil, err
	}
	st.fold, st.foldDir = l, filepath.Join(e.dir, "signing-fold-data")
	if err := os.MkdirAll(st.foldDir, 0o700); err != nil {
		return nil, err
	}
	w, admin, _, err := e.openSigning(ctx, l)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	st.foldAdmin = admin
	e.note(fmt.Sprintf("writing a signed log of %d session events and its judgment for the signing rows", e.cfg.Events))
	h := newBenchHistory()
	if err := h.write(ctx, w, e.cfg.Events); err != nil {
		return nil, err
	}
	id, err := w.Identity(ctx)
	if err != nil {
		return nil, err
	}
	origin := merkle.Origin(id)
	tree, err := merkle.OpenStoredTree(st.foldDir, origin)
	if err != nil {
		return nil, err
	}
	defer tree.Close()
	signer, _, err := merkle.LoadCheckpointKey(st.foldDir)
	if err != nil {
		return nil, err
	}
	if _, err := merkle.EnsureStream(ctx, l.js); err != nil {
		return nil, err
	}
	cp := &merkle.Checkpointer{Log: w, JS: l.js, Tree: tree, Signer: signer, Origin: origin, Judge: w.NewJudger(admin)}
	stated, _, err := cp.Once(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.write(ctx, w, foldPast(e.cfg.Events)); err != nil {
		return nil, err
	}
	last, err := w.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	past := last - uint64(stated.Size)
	e.notes = append(e.notes, fmt.Sprintf("signing rows: a signed log of %s events, serve's judgment statement covering seq 1..%s; %s events (%.1f%%) past it, whose signatures a verified fold checks one by one",
		benchThousands(int64(last)), benchThousands(stated.Size), benchThousands(int64(past)), 100*float64(past)/float64(last)))
	return st, nil
}

// foldPast is how many events the fold row's log has past its judgment
// statement: one short of the messages serve checkpoints after
// (merkle.DefaultEvery), the most a log written steadily has past its
// last statement, or a tenth of a smaller log.
func foldPast(events int) int { return min(merkle.DefaultEvery-1, max(events/10, 1)) }

// signingFold folds the fold row's log into every session's state in
// memory with the session reducer: verified, through a log that judges
// every event (signature, key, role, order) and takes serve's statement
// on the fast path (merkle.FastPath: one note signature, the stored hashes
// proven against its root, each message checked against its leaf, and
// signatures verified past it only), timed from the statement's
// check; or through a log that judges nothing.
func (e *benchEnv) signingFold(verified bool) benchRun {
	return func(ctx context.Context) (benchSample, error) {
		st, err := e.signingFoldLog(ctx)
		if err != nil {
			return benchSample{}, err
		}
		cfg := natslog.Config{Registry: e.reg}
		if verified {
			cfg.Verifier = attestation.NewVerifier(st.foldAdmin)
		}
		l, err := natslog.Open(ctx, st.fold.srv.Conn(), cfg)
		if err != nil {
			return benchSample{}, err
		}
		defer l.Close()
		start := time.Now()
		if verified {
			keys, err := merkle.LoadKeys(st.foldDir)
			if err != nil {
				return benchSample{}, err
			}
			j, why, err := merkle.FastPath(ctx, l, st.fold.js, keys, st.foldDir)
			if err != nil {
				return benchSample{}, err
			}
			if j == nil {
				return benchSample{}, fmt.Errorf("no fast path: %s", why)
			}
			l.SetJudged(j)
		}
		n, err := foldSessions(ctx, l)
		elapsed := time.Since(start)
		if err != nil {
			return benchSample{}, err
		}
		if _, q := l.Quarantined(); q > 0 {
			return benchSample{}, fmt.Errorf("the verified fold quarantined %d events of a log with no forgery", q)
		}
		if verified && !st.foldNoted {
			st.foldNoted = true
			e.notes = append(e.notes, fmt.Sprintf("signing fold row: a verified fold made %d Ed25519 verifications (one per signature past the statement: a batch's covers all its messages)",
				l.Verifier().Checked()))
		}
		if st.foldN == 0 {
			st.foldN = n
		} else if n != st.foldN {
			return benchSample{}, fmt.Errorf("a fold of the signed log folded %d events, an earlier one %d", n, st.foldN)
		}
		return benchSample{ops: n, elapsed: elapsed}, nil
	}
}
