package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/servelog"
)

// TestSpool_PoisonThenHundred: a spooled entry that can never be stored
// (a 2 MB tool_use_id, as an older hook would have spooled it) is set
// aside, redacted, with its reason, and the 100 good hooks behind it are
// delivered, in order.
func TestSpool_PoisonThenHundred(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	ctx, data, sp := spoolAlone(t, 60*time.Second)
	const sid = "5e551011-0000-4000-8000-00000000b00c"
	aws := "AK" + "IA" + "QWERTYUIOPASDFGH"
	poison := fmt.Sprintf(`{"session_id":%q,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"%s","tool_input":{"command":"echo %s"}}`,
		sid, strings.Repeat("x", 2<<20), aws)
	spoolPut(t, sp, poison)
	for i := range 100 {
		spoolPut(t, sp, fmt.Sprintf(`{"session_id":%q,"hook_event_name":"UserPromptSubmit","prompt_id":"p-%03d","prompt":"prompt %03d"}`, sid, i, i))
	}
	b, svc := localService(t, data) // no server: this process's own log, as serve opens it
	n, err := svc.DrainSpool(ctx)
	if err != nil || n != 100 {
		t.Fatalf("drainSpool = %d, %v; want 100 delivered", n, err)
	}
	got := signalIDs(observations(t, ctx, b, sid))
	if len(got) != 100 {
		t.Fatalf("%d observations stored, want 100", len(got))
	}
	for i, id := range got {
		if want := fmt.Sprintf("p-%03d", i); id != want {
			t.Fatalf("observation %d is %s, want %s: order lost", i, id, want)
		}
	}
	left, _ := sp.Pending()
	if len(left) != 0 {
		t.Errorf("%d entries left in the spool", len(left))
	}
	rej, _ := filepath.Glob(filepath.Join(sp.Dir(), claude.RejectedDir, "*"))
	if len(rej) != 2 {
		t.Fatalf("rejected/ holds %v, want the poison entry and its reason", rej)
	}
	noneHolds(t, rej, aws)
	for _, f := range rej {
		b, _ := os.ReadFile(f)
		if strings.HasSuffix(f, ".why") && !strings.Contains(string(b), "tool_use_id") {
			t.Errorf("reason %q does not name the field", b)
		}
	}
	// Rejected entries go after the retention period.
	if n, err := sp.SweepRejected(time.Now().Add(claude.DefaultRejectedRetention+time.Minute), claude.DefaultRejectedRetention); err != nil || n != 1 {
		t.Errorf("SweepRejected = %d, %v; want 1", n, err)
	}
}

// TestSpool_StraysSaidAtWarn: a file named as a spool entry that no hook
// wrote (here a directory) is moved aside unread, and said to serve's
// log at WARN, as README says, never at INFO.
func TestSpool_StraysSaidAtWarn(t *testing.T) {
	ctx, data, sp := spoolAlone(t, 60*time.Second)
	stray := ulid.Make().String() + ".json"
	if err := os.Mkdir(filepath.Join(sp.Dir(), stray), 0o700); err != nil {
		t.Fatal(err)
	}
	_, svc := localService(t, data)
	var said []string
	svc.Said = func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	if _, err := svc.DrainSpool(ctx); err != nil {
		t.Fatal(err)
	}
	if len(said) != 1 || !strings.Contains(said[0], stray) {
		t.Fatalf("said %q, want the stray named once", said)
	}
	var logged bytes.Buffer
	sl := servelog.New(&logged, "text")
	fmt.Fprintf(sl, "logbook serve: %s\n", said[0])
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "no hook wrote") {
		t.Errorf("serve's log has %q, want the stray at WARN", logged.String())
	}
}

// TestHook_Caps: the hook command refuses an over-long id with exit 1
// and keeps it aside, and cuts an over-size payload's strings to its cap
// so it still goes through.
func TestHook_Caps(t *testing.T) {
	data := t.TempDir()
	const sid = "5e551011-0000-4000-8000-00000000cafe"
	run := func(payload string) error {
		var out strings.Builder
		return runCLI(context.Background(), []string{"--data", data, "hook", "claude"}, strings.NewReader(payload), &out, &out)
	}
	long := fmt.Sprintf(`{"session_id":%q,"hook_event_name":"PreToolUse","tool_use_id":"%s"}`, sid, strings.Repeat("y", 2<<20))
	if err := run(long); err == nil || !strings.Contains(err.Error(), "tool_use_id") {
		t.Fatalf("2 MB tool_use_id: err %v, want a refusal naming tool_use_id", err)
	}
	if rej, _ := filepath.Glob(filepath.Join(data, "spool", claude.RejectedDir, "*.why")); len(rej) != 1 {
		t.Errorf("rejected reasons %v, want 1", rej)
	}
	big := fmt.Sprintf(`{"session_id":%q,"hook_event_name":"PostToolUse","tool_use_id":"t1","tool_name":"Bash","tool_response":{"stdout":"%s"}}`, sid, strings.Repeat("z ", 1<<20))
	if err := run(big); err != nil {
		t.Fatalf("2 MB tool_response: %v", err)
	}
	es, _ := openSpool(t, data).Pending()
	if len(es) != 1 || len(es[0].Payload) > claude.MaxHookSend || !strings.Contains(string(es[0].Payload), claude.CutMember) {
		t.Fatalf("spooled %d entries; want one cut payload under %d bytes", len(es), claude.MaxHookSend)
	}
	o, err := claude.ParseHook(es[0].Payload, claude.Config{})
	if err != nil || o.Cut == nil || o.Cut.Size != int64(len(big)) {
		t.Errorf("cut payload parses to %+v, %v; want Cut.Size %d", o.Cut, err, len(big))
	}
}

// TestHook_SameBytesBothPaths: a payload delivered at once by the hook
// (a request to the server) and one drained from the spool store the
// same raw text: exact bytes, spacing and "<", ">", "&" kept, redacted
// the same way.
func TestHook_SameBytesBothPaths(t *testing.T) {
	t.Parallel()
	ctx, data, sp := spoolAlone(t, 60*time.Second)
	const sid = "5e551011-0000-4000-8000-00000000b17e"
	aws := "AK" + "IA" + "ZXCVBNMASDFGHJKL"
	payload := fmt.Sprintf("{\"session_id\" : %q,\n  \"hook_event_name\":\"Stop\", \"note\":\"<b>&amp; aws=<%s>\", \"x\":\"\\u00e9\"}", sid, aws)
	b, svc := localService(t, data) // no server: this process's own log, as serve opens it
	// Direct: the request as deliverHook encodes it.
	prepared, err := claude.PrepareHook([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	req, err := json.Marshal(api.HookRequest{ID: ulid.Make().String(), Text: string(prepared)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Hook(ctx, req); err != nil {
		t.Fatal(err)
	}
	// Spool: drained by the server.
	spoolPut(t, sp, string(prepared))
	if n, err := svc.DrainSpool(ctx); err != nil || n != 1 {
		t.Fatalf("drainSpool = %d, %v", n, err)
	}
	var raws []string
	for _, o := range observations(t, ctx, b, sid) {
		raws = append(raws, o.Raw)
	}
	if len(raws) != 2 {
		t.Fatalf("%d observations, want 2", len(raws))
	}
	if raws[0] != raws[1] {
		t.Errorf("direct and spooled raw differ:\n%s\n%s", raws[0], raws[1])
	}
	want := strings.Replace(payload, aws, "[REDACTED:aws_access_key]", 1)
	if raws[0] != want {
		t.Errorf("raw\n %s\nwant the exact payload, redacted:\n %s", raws[0], want)
	}
}

// spoolAlone returns a context that ends after timeout, a data dir no
// server runs on, and the data dir's hook spool.
func spoolAlone(t *testing.T, timeout time.Duration) (context.Context, string, *claude.Spool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	data := t.TempDir()
	return ctx, data, openSpool(t, data)
}

// spoolPut puts payload into sp, as a hook with no server to hand it to
// does.
func spoolPut(t *testing.T, sp *claude.Spool, payload string) {
	t.Helper()
	if _, err := sp.Put([]byte(payload)); err != nil {
		t.Fatal(err)
	}
}

// noneHolds fails the test for each of files that holds secret in clear.
func noneHolds(t *testing.T, files []string, secret string) {
	t.Helper()
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret in clear", f)
		}
	}
}

// drainData drains the spool of data dir data once, as serve does, and
// returns how many entries it delivered.
func drainData(t *testing.T, ctx context.Context, data string) int {
	t.Helper()
	_, svc := localService(t, data) // no server: this process's own log, as serve opens it
	n, err := svc.DrainSpool(ctx)
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	return n
}

// TestSpool_RefusedKinds: every kind of payload a hook refuses
// (claude.PrepareHook's refusals, and one over claude.MaxHookRead), kept
// in the spool as it came by a hook with no logbook to hand it to, is
// refused by the drain too and set aside, redacted, with its reason; the
// good payload behind them is delivered.
func TestSpool_RefusedKinds(t *testing.T) {
	t.Parallel()
	ctx, data, sp := spoolAlone(t, 120*time.Second)
	const sid = "5e551011-0000-4000-8000-00000000d00d"
	aws := "AK" + "IA" + "QWERTYUIOPASDFGH"
	head := fmt.Sprintf(`{"session_id":%q,"hook_event_name":"PostToolUse","tool_use_id":"t1","note":"%s",`, sid, aws)
	// Many keys in tool_input, which the gate reviews and a cut never
	// drops.
	manyKeys := func(n int) string {
		var b strings.Builder
		b.WriteString(head + `"tool_input":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"key_%06d":"v"`, i)
		}
		b.WriteString("}}")
		return b.String()
	}
	kinds := []struct{ name, payload string }{
		{"malformed", head},
		{"invalid UTF-8", head + "\"x\":\"\xff\"}"},
		{"not an object", `["` + aws + `"]`},
		{"duplicate key", head + `"note":"x"}`},
		{"too deep", head + `"x":` + strings.Repeat("[", claude.MaxHookDepth) + strings.Repeat("]", claude.MaxHookDepth) + "}"},
		{"too many keys", manyKeys(claude.MaxHookKeys + 1)},
		{"missing field", fmt.Sprintf(`{"hook_event_name":"Stop","note":"%s"}`, aws)},
		{"wrong type", head + `"tool_input":"x"}`},
		{"field too long", head + `"tool_name":"` + strings.Repeat("x", claude.MaxHookID+1) + `"}`},
		{"malformed id", fmt.Sprintf(`{"session_id":"a/b","hook_event_name":"Stop","note":"%s"}`, aws)},
		{"over MaxHookSend after cutting", manyKeys(60_000)},
		// What a hook read of a payload over MaxHookRead: its first
		// MaxHookRead+1 bytes, which trim to a small valid payload.
		{"over MaxHookRead", head + `"x":1}` + strings.Repeat(" ", claude.MaxHookRead)},
	}
	for _, k := range kinds {
		if _, err := claude.PrepareHook([]byte(k.payload)); err == nil && len(k.payload) <= claude.MaxHookRead {
			t.Fatalf("%s: PrepareHook takes it", k.name)
		}
		spoolPut(t, sp, k.payload)
	}
	spoolPut(t, sp, fmt.Sprintf(`{"session_id":%q,"hook_event_name":"UserPromptSubmit","prompt_id":"p-1","prompt":"go"}`, sid))
	if n := drainData(t, ctx, data); n != 1 {
		t.Fatalf("drain delivered %d, want the good payload alone", n)
	}
	if left, _ := sp.Pending(); len(left) != 0 {
		t.Errorf("%d entries left in the spool", len(left))
	}
	whys, _ := filepath.Glob(filepath.Join(sp.Dir(), claude.RejectedDir, "*.why"))
	kept, _ := filepath.Glob(filepath.Join(sp.Dir(), claude.RejectedDir, "*.json"))
	if len(whys) != len(kinds) || len(kept) != len(kinds) {
		t.Fatalf("rejected/ holds %d payloads and %d reasons, want %d of each", len(kept), len(whys), len(kinds))
	}
	noneHolds(t, append(whys, kept...), aws)
}
