package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/merkle"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// verifyCLI runs `logbook --data data verify ARGS...` and returns its
// output and exit code.
func verifyCLI(t *testing.T, data string, args ...string) (string, int) {
	t.Helper()
	var out syncBuffer
	err := runCLI(t.Context(), append([]string{"--data", data, "verify"}, args...), strings.NewReader(""), &out, &out)
	if err != nil {
		out.Write([]byte(err.Error() + "\n"))
	}
	return out.String(), exitCode(err)
}

// seqOf returns the stream sequence of the first message of data's log
// whose body holds marker (no server may run on data).
func seqOf(t *testing.T, data, marker string) uint64 {
	t.Helper()
	srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: dataDir(data).path("jetstream")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	l, err := natslog.Open(t.Context(), srv.Conn(), natslog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var seq uint64
	for m, err := range l.ReadRaw(t.Context(), natslog.StreamSubjects, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if seq == 0 && bytes.Contains(m.Data, []byte(marker)) {
			seq = m.Seq
		}
	}
	if seq == 0 {
		t.Fatalf("no message holds %q", marker)
	}
	return seq
}

// flipIn flips one byte of the first message in data's first block file
// whose body holds marker (found by seqOf; no server may run on data):
// the server drops that message, unseen until something reads it.
func flipIn(t *testing.T, data, marker string) {
	t.Helper()
	blk := dataDir(data).path("jetstream", "jetstream", "$G", "streams", natslog.StreamName, "msgs", "1.blk")
	b, err := os.ReadFile(blk)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(marker)) // the block holds messages in sequence order
	if i < 0 {
		t.Fatalf("%s holds no %s", blk, marker)
	}
	b[i] ^= 1
	if err := os.WriteFile(blk, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// `logbook verify` on a log serve checkpointed: exit 0 and an inclusion
// proof; after one byte of a block file is flipped with serve stopped,
// exit 1 naming the sequence of the message the byte was in; a usage
// error is exit 2.
func TestVerifyCLINamesTheFlippedSequence(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	logs := &syncBuffer{}
	go func() {
		served <- runCLI(ctx, []string{"--data", data, "serve", "--workers", "0", "--checkpoint-every", "1", "--checkpoint-interval", "1s"}, strings.NewReader(""), logs, logs)
	}()
	waitServer(t, dataDir(data))
	for i, cwd := range []string{"/work/one", "/work/MARKER-two", "/work/three"} {
		promptSession(t, t.Context(), data, "verify-"+strconv.Itoa(i), cwd)
	}
	// Wait for a checkpoint that covers the log (serve signs one at most
	// a second after the log grew): one that covers seq 1 alone, signed
	// while the last sessions were still being appended, leaves the
	// sequences after it "recomputed only" below.
	deadline := time.Now().Add(time.Minute)
	var out string
	for {
		var code int
		out, code = verifyCLI(t, data, "--seq", "1")
		if code == 0 && strings.Contains(out, "proof:") && !strings.Contains(out, "recomputed only") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint covering the log within a minute:\n%s\nserve:\n%s", out, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("verify --seq 1:\n%s", out)
	if out, code := verifyCLI(t, data, "--seq", "1", "--id", "01J00000000000000000000000"); code != codeUsage {
		t.Fatalf("--seq and --id: exit %d, want %d:\n%s", code, codeUsage, out)
	}
	if out, code := verifyCLI(t, data, "--seq", "0"); code != codeUsage || !strings.Contains(out, "stream sequences begin at 1") {
		t.Fatalf("--seq 0: exit %d, want %d:\n%s", code, codeUsage, out)
	}
	// --json: one style of names, and a list is never null.
	if out, code := verifyCLI(t, data, "--json"); code != 0 || !strings.Contains(out, `"problems": []`) || strings.Contains(out, `"Seq"`) || !strings.Contains(out, `"ok": true`) {
		t.Fatalf("verify --json: exit %d:\n%s", code, out)
	}
	stop()
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	// Stored hashes cut short (a serve behind, or a damaged file cut to
	// its whole leaves): verify says which sequences they cover.
	hashes, _ := filepath.Glob(dataDir(data).path(merkle.TreeDir, "*.hashes"))
	if len(hashes) != 1 {
		t.Fatalf("stored hashes files: %v", hashes)
	}
	if err := os.Truncate(hashes[0], 3*32); err != nil { // the tree of 2 leaves stores 3 hashes
		t.Fatal(err)
	}
	if out, code := verifyCLI(t, data); code != 0 || !strings.Contains(out, "stored hashes: 2 leaves, seq 1..2; seq 3..") || !strings.Contains(out, "stored hashes of seq 1..2\n") {
		t.Fatalf("verify with two stored leaves: exit %d:\n%s", code, out)
	}
	want := seqOf(t, data, "MARKER-two")
	flipIn(t, data, "MARKER-two")
	out, code := verifyCLI(t, data)
	t.Logf("verify after the flip:\n%s", out)
	if code != codeError || !strings.Contains(out, "first bad sequence "+strconv.FormatUint(want, 10)+":") {
		t.Fatalf("exit %d, want %d naming seq %d:\n%s", code, codeError, want, out)
	}
	// verify says what it found, never to run verify.
	if strings.Contains(out, attestation.VerifyAdvice) {
		t.Errorf("verify after the flip advises running verify:\n%s", out)
	}
	// An --id that is no event id says what one is, not the parser's words.
	if out, code := verifyCLI(t, data, "--id", "NOTAULID"); code != codeUsage || !strings.Contains(out, `--id "NOTAULID": not an event id: an event id is a ULID, 26 characters`) || strings.Contains(out, "bad data size") {
		t.Errorf("verify --id NOTAULID: exit %d:\n%s", code, out)
	}
	// The zero ULID parses but names no event: refused, never taken for
	// no --id (a verify of the whole log).
	if out, code := verifyCLI(t, data, "--id", "00000000000000000000000000"); code != codeUsage || !strings.Contains(out, "the zero ULID names no event") {
		t.Errorf("verify --id 0…0: exit %d:\n%s", code, out)
	}
}

// `logbook verify` on a log no serve has run on (an import alone) has
// nothing to compare the recomputed tree with: it says nothing was
// proven and exits 1, rather than that the log agrees with checkpoints
// there are none of; --json says "proven": false and exits 1 too.
func TestVerifyCLISaysWhenNothingIsProven(t *testing.T) {
	data := t.TempDir()
	if err := runCLI(t.Context(), []string{"--data", data, "import", "claude", "../../testdata/claude/projects"}, strings.NewReader(""), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	out, code := verifyCLI(t, data)
	if code != codeError || !strings.Contains(out, "NOTHING PROVEN: no stored hashes and no trusted checkpoint") ||
		!strings.Contains(out, "verify: nothing proven: seq 1..") || strings.Contains(out, "agrees with") || strings.Contains(out, "ok:") {
		t.Fatalf("verify of an imported log: exit %d, want %d:\n%s", code, codeError, out)
	}
	// A sequence past the log's end is a usage error, as for replay
	// --seq and events tail --from.
	out, code = verifyCLI(t, data, "--seq", "999999")
	if code != codeUsage || !strings.Contains(out, "--seq 999999: past the log's last event sequence") {
		t.Fatalf("verify --seq past the end: exit %d, want %d:\n%s", code, codeUsage, out)
	}
	out, code = verifyCLI(t, data, "--json")
	if code != codeError || !strings.Contains(out, `"proven": false`) || !strings.Contains(out, `"ok": false`) {
		t.Fatalf("verify --json of an imported log: exit %d, want %d, \"proven\": false and \"ok\": false:\n%s", code, codeError, out)
	}
}

// TestVerifyCLI_IDOfAQuarantinedEvent: verify --id of an event every fold
// leaves out (published unsigned with the worker's credentials: one that
// decodes, one that does not) finds it at its sequence and says it is
// quarantined and why, with --json too, rather than that the log holds
// no such event; verify --seq of it says so too.
func TestVerifyCLI_IDOfAQuarantinedEvent(t *testing.T) {
	t.Parallel()
	r := newGateRig(t, "f0a9ed00-0000-4000-8000-00000000f0c1", nil)
	_, wnc := connectAs(t, dataDir(r.data), natslog.RoleWorker)
	agg := events.Aggregate{Kind: events.KindSession, ID: "f0a9ed00-0000-4000-8000-00000000f0c2"}
	e := newEvent(agg, 1, time.Time{}, "hook", "SessionStart", events.SessionStarted{Agent: "claude", Cwd: "/work"})
	m := eventMsg(t, e, 0)
	m.Header.Set(natslog.HeaderType, e.Type)
	unsigned := publish(t, wnc, m).Sequence
	// The same event under another id, with a field no event has: it
	// does not decode.
	bad := ulid.Make()
	data := strings.Replace(strings.Replace(string(m.Data), e.ID.String(), bad.String(), 1), "{", `{"nonsense":1,`, 1)
	bm := &nats.Msg{Subject: agg.Subject(), Header: nats.Header{}, Data: []byte(data)}
	undecodable := publish(t, wnc, bm).Sequence
	for _, c := range []struct {
		id  ulid.ULID
		seq uint64
		why string
	}{{e.ID, unsigned, "(unsigned: "}, {bad, undecodable, "(unsigned: does not decode: "}} {
		out, errOut, code := cliExit(t, r.data, "verify", "--id", c.id.String())
		want := fmt.Sprintf("seq %d: event %s is in the log but QUARANTINED %s", c.seq, c.id, c.why)
		if !strings.Contains(out, want) || strings.Contains(errOut, "no such event") {
			t.Errorf("verify --id %s: exit %d; want %q:\n%s%s", c.id, code, want, out, errOut)
		}
		out, errOut, code = cliExit(t, r.data, "verify", "--seq", strconv.FormatUint(c.seq, 10))
		if want := fmt.Sprintf("seq %d: the event message is in the log but QUARANTINED %s", c.seq, c.why); !strings.Contains(out, want) {
			t.Errorf("verify --seq %d: exit %d; want %q:\n%s%s", c.seq, code, want, out, errOut)
		}
		out, errOut, code = cliExit(t, r.data, "--json", "verify", "--id", c.id.String())
		if want := fmt.Sprintf(`"quarantined": {
    "seq": %d,
    "status": "unsigned",`, c.seq); !strings.Contains(out, want) {
			t.Errorf("verify --json --id %s: exit %d; want %q:\n%s%s", c.id, code, want, out, errOut)
		}
	}
	// An event folded as usual is not said to be quarantined.
	tail, errOut, _ := cliExit(t, r.data, "--json", "events", "tail", "--from", "1")
	folded := regexp.MustCompile(`"id": ?"([0-9A-Z]{26})"`).FindStringSubmatch(tail)
	if folded == nil {
		t.Fatalf("events tail gives no id:\n%s%s", tail, errOut)
	}
	if out, errOut, _ := cliExit(t, r.data, "verify", "--id", folded[1]); strings.Contains(out, "QUARANTINED") || strings.Contains(errOut, "no such event") {
		t.Errorf("verify --id %s of a folded event:\n%s%s", folded[1], out, errOut)
	}
}

// TestVerifyError_LeavesOutItsOwnAdvice: what verify says of a read that
// found the stored log cut or changed (its error, an unattested event's
// reason) leaves out the reads' advice to run verify, and keeps the
// error's exit code. (A data dir whose stream lost a message within its
// statement gave "… covers (run `logbook verify`)" from verify itself.)
func TestVerifyError_LeavesOutItsOwnAdvice(t *testing.T) {
	read := errors.New("seq 96: missing from stream LOGBOOK (deleted or lost), within seq 1..1822 that serve's signed checkpoint statement covers" + natslog.VerifyHint)
	err := verifyError{&exitError{codeError, fmt.Errorf("verify: reading the log for unattested events: %w", read)}}
	want := "verify: reading the log for unattested events: seq 96: missing from stream LOGBOOK (deleted or lost), within seq 1..1822 that serve's signed checkpoint statement covers"
	if got := err.Error(); got != want {
		t.Errorf("verify says %q, want %q", got, want)
	}
	if e, ok := errors.AsType[*exitError](err); !ok || e.code != codeError {
		t.Errorf("exit code lost: %#v", err)
	}
	why := "ver 5 comes after ver 3, the aggregate's last attested event (seq 7), but ver 4, which must come between, is not in the log as read (lost from the stream, a damaged block or a deleted message, or never appended; " + attestation.VerifyAdvice + ")"
	if got := withoutVerifyAdvice(why); strings.Contains(got, "logbook verify") || !strings.HasSuffix(got, "or never appended)") {
		t.Errorf("the reason as verify says it: %q", got)
	}
}
