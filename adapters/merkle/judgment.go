package merkle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/mod/sumdb/note"

	"github.com/logbook-dev/logbook/adapters/attestation"
)

// JudgmentSubject is the subject of CheckpointStream serve publishes its
// judgment statements on, each after the checkpoint it is bound to
// (HeaderCheckpointSeq names that checkpoint's sequence). Witnesses
// follow CheckpointSubject only and never see them; `logbook verify`
// passes them over.
const JudgmentSubject = "lbck.judgment"

// judgmentHeader is the first line of a judgment statement's text.
const judgmentHeader = "logbook-judgment/v1"

// MaxJudged bounds the quarantined events one statement lists: past it
// serve publishes none for the checkpoint (readers then verify every
// signature).
const MaxJudged = 100_000

// Judgment is serve's signed statement of what it judged of the log up
// to a checkpoint: every event of stream sequences 1..Size judged by
// signature, key and role (adapters/attestation), and which of them it
// quarantined and why. It is bound to the checkpoint by repeating its
// origin, size and root, and signed, as a signed note
// (golang.org/x/mod/sumdb/note), by the checkpoint key, so a reader who
// trusts that key and checks the root over the messages it reads can
// take the verdicts instead of verifying each event's signature. Its
// note text, each line ended by "\n":
//
//	logbook-judgment/v1
//	<origin>
//	<size: decimal; every event of seq 1..size was judged>
//	<root: std base64 RFC 6962 root of the first size leaves>
//	quarantined <count>
//	<seq> <verdict as one line of JSON: status, key, principal, role, why>
//	… one line per quarantined event, by ascending seq
type Judgment struct {
	Checkpoint                                 // origin, size, root: the checkpoint it is bound to
	Quarantined map[uint64]attestation.Verdict // by stream sequence; nil or empty: none
}

// String returns the statement's note text.
func (j Judgment) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n%d\n%s\nquarantined %d\n", judgmentHeader, j.Origin, j.Size, j.Root, len(j.Quarantined))
	for _, seq := range slices.Sorted(maps.Keys(j.Quarantined)) {
		v, _ := json.Marshal(j.Quarantined[seq]) // JSON escapes every control character: one line
		fmt.Fprintf(&b, "%d %s\n", seq, v)
	}
	return b.String()
}

// ParseJudgment parses a statement's note text as String writes it.
// Errors name the line.
func ParseJudgment(text string) (Judgment, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if !strings.HasSuffix(text, "\n") || len(lines) < 5 || lines[0] != judgmentHeader {
		return Judgment{}, fmt.Errorf("judgment: want %q, origin, size, root and a quarantined count, one a line", judgmentHeader)
	}
	cp, err := ParseCheckpoint(strings.Join(lines[1:4], "\n") + "\n")
	if err != nil {
		return Judgment{}, fmt.Errorf("judgment: %w", err)
	}
	j := Judgment{Checkpoint: cp, Quarantined: map[uint64]attestation.Verdict{}}
	ns, ok := strings.CutPrefix(lines[4], "quarantined ")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 0 || n != len(lines)-5 {
		return Judgment{}, fmt.Errorf("judgment %s %d: line 5 %q: want \"quarantined <count>\" with count the %d lines that follow", cp.Origin, cp.Size, lines[4], len(lines)-5)
	}
	var prev uint64
	for i, l := range lines[5:] {
		ss, vs, _ := strings.Cut(l, " ")
		seq, err := strconv.ParseUint(ss, 10, 64)
		var v attestation.Verdict
		if err != nil || seq <= prev || int64(seq) > cp.Size || json.Unmarshal([]byte(vs), &v) != nil || !v.Status.Quarantined() {
			return Judgment{}, fmt.Errorf("judgment %s %d: line %d %q: want \"<seq> <verdict JSON>\", seqs ascending within 1..%d, a quarantined status", cp.Origin, cp.Size, i+6, l, cp.Size)
		}
		j.Quarantined[seq], prev = v, seq
	}
	return j, nil
}

// Sign returns j as a signed note with s's signature.
func (j Judgment) Sign(s note.Signer) ([]byte, error) {
	msg, err := note.Sign(&note.Note{Text: j.String()}, s)
	if err != nil {
		return nil, fmt.Errorf("sign judgment %s %d: %w", j.Origin, j.Size, err)
	}
	return msg, nil
}

// OpenJudgment checks a signed statement against the trusted checkpoint
// keys (one Ed25519 verification) and parses it; it returns the signer's
// key name. A statement no trusted key signed is an error.
func OpenJudgment(signed []byte, keys []note.Verifier) (Judgment, string, error) {
	n, err := note.Open(signed, note.VerifierList(keys...))
	if err != nil {
		return Judgment{}, "", fmt.Errorf("judgment: %w", err)
	}
	j, err := ParseJudgment(n.Text)
	if err != nil {
		return Judgment{}, "", err
	}
	return j, n.Sigs[0].Name, nil
}

// PublishJudgment stores a signed statement bound to the checkpoint at
// cpSeq in CheckpointStream.
func PublishJudgment(ctx context.Context, js jetstream.JetStream, cpSeq uint64, signed []byte) error {
	m := nats.NewMsg(JudgmentSubject)
	m.Header.Set(HeaderCheckpointSeq, strconv.FormatUint(cpSeq, 10))
	m.Data = signed
	if _, err := js.PublishMsg(ctx, m, jetstream.WithExpectStream(CheckpointStream)); err != nil {
		return fmt.Errorf("publish judgment of checkpoint %d: %w", cpSeq, err)
	}
	return nil
}

// errNoTree reports that the stored hashes cannot prove a statement.
var errNoTree = errors.New("no stored hashes of the statement's tree")
