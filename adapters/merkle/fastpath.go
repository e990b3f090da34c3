package merkle

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// FastPath returns the fast path (natslog.Judged) a reader of l takes
// when it trusts a checkpoint key of keys, or nil and why not. It reads
// the last judgment statement in CheckpointStream and takes it when a
// trusted checkpoint key signed it (one Ed25519 verification), it is of
// the stream's origin now, and the stored tree hashes of the data dir
// dir (TreePath, as serve writes them) hold its size and make its root
// (Prove). Each message a read then takes at a sequence the statement
// covers is checked against the proven leaf hash of its sequence
// (Proven.Check). No statement, an untrusted or other-origin one, or
// stored hashes that do not prove it, give no fast path (nil, the
// reason): the reader verifies every signature as before. Nor does a
// log that lost messages, as the server counts them, as its last one
// reads (natslog.Log.TailHeld) or as the data dir's stream.json records
// a loss accepted (serve --accept-stream-loss): a statement over a log
// with a hole cannot be read whole. An error is a
// failure to read the stream or the file.
func FastPath(ctx context.Context, l *natslog.Log, js jetstream.JetStream, keys Keys, dir string) (*natslog.Judged, string, error) {
	if l.Verifier() == nil {
		return nil, "the log is not read with a verifier", nil
	}
	if rec, have, err := datadir.Dir(dir).ReadStreamRecord(); err == nil && have && rec.Gone > 0 {
		return nil, fmt.Sprintf("the log lost %d messages (a loss accepted with --accept-stream-loss): every signature is checked", rec.Gone), nil
	}
	return lastStatement(ctx, l, js, keys, func(origin string) (*Tree, error) {
		t, err := LoadTree(TreePath(dir, origin))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no stored hashes of %s in %s: %w", origin, dir, errNoTree)
		}
		return t, err
	})
}

// lastStatement returns the last judgment statement in js's
// CheckpointStream as a natslog.Judged when a checkpoint key of keys
// signed it, it is of l's stream's origin now, and the tree tree(origin)
// returns proves its root; else nil and why not. An error of tree that
// wraps errNoTree is a why, any other an error. The stream's identity,
// the tail it holds and the tree of its origin are read while the
// statement is (statementAhead): what is answered, and in what order the
// checks refuse, is as if each were read after the statement.
func lastStatement(ctx context.Context, l *natslog.Log, js jetstream.JetStream, keys Keys, tree func(origin string) (*Tree, error)) (*natslog.Judged, string, error) {
	if len(keys.Checkpoint) == 0 {
		return nil, "no checkpoint key trusted", nil
	}
	ahead := make(chan statementAhead, 1)
	go func() { ahead <- readAhead(ctx, l, tree) }()
	var a *statementAhead
	wait := func() *statementAhead {
		if a == nil {
			got := <-ahead
			a = &got
		}
		return a
	}
	defer wait() // every goroutine started here has returned
	s, err := js.Stream(ctx, CheckpointStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, "no checkpoints", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("fast path: stream %s: %w", CheckpointStream, err)
	}
	m, err := s.GetLastMsgForSubject(ctx, JudgmentSubject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		if s.CachedInfo().State.Msgs == 0 {
			return nil, "no checkpoints yet", nil // a new log, or one only imported into
		}
		return nil, "no judgment statement (a log checkpointed before serve stated its judgments)", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("fast path: last judgment: %w", err)
	}
	j, signer, err := OpenJudgment(m.Data, keys.Checkpoint)
	if err != nil {
		return nil, fmt.Sprintf("judgment statement %d: %v", m.Sequence, err), nil
	}
	a = wait()
	id, err := a.id, a.idErr
	if err != nil {
		return nil, "", err
	}
	end, err := a.end, a.endErr
	if err != nil {
		return nil, "", err
	}
	if id.Gone() > 0 || end < id.LastSeq {
		return nil, fmt.Sprintf("the log lost messages (it holds %d of seq %d..%d, and gives seq %d last): every signature is checked", id.Msgs, id.FirstSeq, id.LastSeq, end), nil
	}
	if origin := Origin(id); j.Origin != origin {
		return nil, fmt.Sprintf("judgment statement %d is of origin %s, the stream now is %s", m.Sequence, j.Origin, origin), nil
	}
	t, err := a.t, a.tErr
	if err == nil && t.Size() < int64(j.Size) {
		// Read before the statement, the stored hashes may lack leaves
		// it covers: read again, after it, as they were read before.
		t, err = tree(j.Origin)
	}
	if errors.Is(err, errNoTree) {
		return nil, strings.TrimSuffix(err.Error(), ": "+errNoTree.Error()), nil
	}
	if err != nil {
		return nil, "", err
	}
	p, err := Prove(t, j.Size, j.Root)
	if err != nil {
		return nil, fmt.Sprintf("judgment statement %d: %v", m.Sequence, err), nil
	}
	return &natslog.Judged{Through: uint64(j.Size), Quarantined: j.Quarantined, Check: p.Check, CheckHeader: p.CheckHeader},
		fmt.Sprintf("seq 1..%d judged by %s (statement %d, %d quarantined)", j.Size, signer, m.Sequence, len(j.Quarantined)), nil
}

// statementAhead is what lastStatement reads while it reads the
// statement: the stream's identity, the last message it holds
// (natslog.Log.TailHeld) and the tree of its origin, each with its
// error; what an earlier one's error left unread is unset.
type statementAhead struct {
	id     natslog.Identity
	idErr  error
	end    uint64
	endErr error
	t      *Tree
	tErr   error
}

// readAhead reads l's identity, then the last message it holds and the
// tree tree(Origin) of its origin, at once.
func readAhead(ctx context.Context, l *natslog.Log, tree func(origin string) (*Tree, error)) statementAhead {
	var a statementAhead
	if a.id, a.idErr = l.Identity(ctx); a.idErr != nil {
		return a
	}
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		a.t, a.tErr = tree(Origin(a.id))
	}()
	a.end, a.endErr = l.TailHeld(ctx, a.id)
	<-loaded
	return a
}

// UseFastPath sets l's fast path (natslog.Log.SetJudged) from the data
// dir dir's trusted keys (LoadKeys) and stored tree hashes and the last
// judgment statement in js's CheckpointStream, and returns what it took
// or why it took none (FastPath). An error (the keys file, the stream)
// leaves l verifying every signature.
func UseFastPath(ctx context.Context, l *natslog.Log, js jetstream.JetStream, dir string) (string, error) {
	keys, err := LoadKeys(dir)
	if err != nil {
		return "", err
	}
	return UseFastPathKeys(ctx, l, js, dir, keys)
}

// UseFastPathKeys is UseFastPath with the data dir's trusted keys given:
// keys is what LoadKeys(dir) returned (a caller that loaded them ahead,
// while it waited on the server: deriving the checkpoint key's public
// half from its private one costs a millisecond at a process's first
// use of Ed25519).
func UseFastPathKeys(ctx context.Context, l *natslog.Log, js jetstream.JetStream, dir string, keys Keys) (string, error) {
	j, why, err := FastPath(ctx, l, js, keys, dir)
	if err != nil {
		return "", err
	}
	if j != nil {
		l.SetJudged(j)
	}
	return why, nil
}

// ResumeJudger returns the Judger serve's checkpoints state their
// judgments with (Checkpointer.Judge), trusting admin, the pinned admin
// public key: one that takes up from the last judgment statement in js's
// CheckpointStream when a reader would take it (a trusted checkpoint
// key of the data dir dir signed it, it is of l's stream's origin, and
// t, serve's stored tree of that origin, proves its root) and judges
// only what follows (natslog.Log.ResumeJudger, which drops it when a
// message it reads there is not its leaf); otherwise one that judges
// the log from its start. The string says which, and why. An error is
// the keys file's, the stream's or the log's.
func ResumeJudger(ctx context.Context, l *natslog.Log, js jetstream.JetStream, t *Tree, dir string, admin ed25519.PublicKey) (*natslog.Judger, string, error) {
	keys, err := LoadKeys(dir)
	if err != nil {
		return nil, "", err
	}
	id, err := l.Identity(ctx)
	if err != nil {
		return nil, "", err
	}
	origin := Origin(id)
	s, why, err := lastStatement(ctx, l, js, keys, func(o string) (*Tree, error) {
		if o != origin {
			return nil, fmt.Errorf("no stored hashes of %s: %w", o, errNoTree)
		}
		return t, nil
	})
	if err != nil {
		return nil, "", err
	}
	if s == nil {
		return l.NewJudger(admin), "judging the log from its start: " + why, nil
	}
	j, err := l.ResumeJudger(ctx, admin, s)
	if err != nil {
		return nil, "", err
	}
	if _, dropped := j.Resumed(); dropped != "" {
		return j, dropped, nil
	}
	return j, fmt.Sprintf("judging from seq %d: %s", s.Through+1, why), nil
}
