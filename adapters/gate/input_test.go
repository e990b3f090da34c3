package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// wholeInput returns the tool_input of hook payload b as written.
func wholeInput(t *testing.T, b []byte) []byte {
	t.Helper()
	var h struct {
		In json.RawMessage `json:"tool_input"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h.In
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// TestHookInput: a payload PrepareHook keeps whole sends no input beside
// it; a cut one sends its tool_input byte for byte (spaces and escapes as
// written), null when it has none; one over MaxJudgedInput is refused
// naming its size and the cap.
func TestHookInput(t *testing.T) {
	pad := strings.Repeat("x", claude.MaxHookSend)
	in := `{ "command" : "ls\u0020-l; rm -rf /x" , "description":"` + pad + `" }`
	big := `{"command":"ls","description":"` + strings.Repeat("y", MaxJudgedInput) + `"}`
	cases := []struct {
		name, payload, want string
		tooLarge            int
	}{
		{"small", `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`, "", 0},
		{"cut", `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":` + in + `}`, in, 0},
		{"cut, the padding beside the input", `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"extra":"` + pad + `"}`, `{"command":"ls"}`, 0},
		{"cut, no tool_input", `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","extra":"` + pad + `"}`, "null", 0},
		{"over the cap", `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":` + big + `}`, "", len(big)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := HookInput([]byte(c.payload))
			if c.tooLarge > 0 {
				tl, ok := errors.AsType[*TooLargeError](err)
				want := fmt.Sprintf("the tool input is too large to judge (%d bytes, cap %d)", c.tooLarge, MaxJudgedInput)
				if !ok || err.Error() != want || tl.Digest != sha([]byte(big)) || got != "" {
					t.Fatalf("got %d bytes, %v, want %q", len(got), err, want)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %.80q, %v, want %.80q", got, err, c.want)
			}
		})
	}
	if _, err := HookInput([]byte(`{"hook_event_name":"PreToolUse"`)); err == nil {
		t.Error("a payload that does not parse: no error")
	}
}

// TestService_JudgesTheWholeInput: a gated hook payload over the send cap
// is recorded cut but judged on the whole tool input sent beside it:
// a chained command whose deny-listed part lies past the cut is denied,
// for PreToolUse and PermissionRequest alike, and the review names the
// whole input's digest; a harmless one is still allowed. A cut payload
// without its whole input, or with one over the cap, is denied unjudged
// (on both of the server's paths), never judged on the cut copy; an
// input that is not the uncut payload's own is refused.
func TestService_JudgesTheWholeInput(t *testing.T) {
	r := newRig(t, "allow = [\"Bash(ls:*)\", \"Bash(echo:*)\"]\ndeny = [\"Bash(rm -rf:*)\", \"Bash(curl:*)\"]\n")
	svc := &Service{Gate: r.gate, Ingest: func(ctx context.Context, data []byte, then ingest.Then) (session.State, error) {
		var req HookGateRequest
		if err := json.Unmarshal(data, &req); err != nil {
			return session.State{}, err
		}
		if req.Input != "" {
			return session.State{}, errors.New("the whole input reached the recorder")
		}
		id := ulid.MustParseStrict(req.ID)
		_, st, err := r.ing.HookThen(ctx, claude.Entry{ID: req.ID, Time: ulid.Time(id.Time()), Payload: []byte(req.Text)}, then)
		return st, err
	}}
	// Each call in a session of its own: the refusals add up to no
	// breaker.
	n := 0
	payload := func(event, useID, command string, pad int) []byte {
		n++
		b, _ := json.Marshal(map[string]any{"session_id": fmt.Sprintf("9a7e0000-0000-4000-8000-%012d", n), "transcript_path": "/nonexistent/x.jsonl", "cwd": "/tmp", "permission_mode": "default",
			"hook_event_name": event, "tool_name": "Bash", "tool_use_id": useID,
			"tool_input": map[string]any{"command": command, "description": strings.Repeat("d", pad)}})
		return b
	}
	// ask sends payload as the hook does: prepared, the whole input beside
	// it (input "-": none; else input itself when not "").
	ask := func(svc *Service, payload []byte, input string) (Verdict, error) {
		t.Helper()
		prepared, err := claude.PrepareHook(payload)
		if err != nil {
			t.Fatal(err)
		}
		switch input {
		case "":
			if input, err = HookInput(payload); err != nil {
				t.Fatal(err)
			}
		case "-":
			input = ""
		}
		req, _ := json.Marshal(HookGateRequest{ID: ulid.Make().String(), Text: string(prepared), Input: input})
		v, err := svc.hookGate(t.Context(), req)
		if err != nil {
			return Verdict{}, err
		}
		return v.(Verdict), nil
	}
	state := func() session.State {
		st, err := r.gate.Sessions.State(t.Context(), events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("9a7e0000-0000-4000-8000-%012d", n)})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a5000 := "ls " + strings.Repeat("a", 5000)
	const pad = 300 << 10 // the payload over the send cap, its input under MaxJudgedInput
	for i, event := range []string{EventPreToolUse, EventPermissionRequest} {
		chained := payload(event, fmt.Sprintf("toolu_chain%d", i), a5000+"; rm -rf /x", pad)
		if len(chained) <= claude.MaxHookSend {
			t.Fatalf("payload of %d bytes: not over the send cap", len(chained))
		}
		v, err := ask(svc, chained, "")
		if err != nil || v.Decision != DecideDeny || v.By.Name != "Bash(rm -rf:*)" {
			t.Errorf("%s, chained: %+v %v, want deny by Bash(rm -rf:*)", event, v, err)
		}
		d, ok := state().DecidedReview(v.ReviewID)
		if want := sha(wholeInput(t, chained)); !ok || d.ArgsDigest != want {
			t.Errorf("%s, chained: review %+v, want args digest %s", event, d, want)
		}

		harmless := payload(event, fmt.Sprintf("toolu_ls%d", i), a5000, pad)
		if v, err := ask(svc, harmless, ""); err != nil || v.Decision != DecideAllow || v.By.Name != "Bash(ls:*)" {
			t.Errorf("%s, harmless: %+v %v, want allow by Bash(ls:*)", event, v, err)
		}

		// The cut copy reads "ls aaaa…", which Bash(ls:*) would allow.
		for name, svc := range map[string]*Service{"hook verb": svc, "no recorder": {Gate: r.gate}} {
			p := payload(event, fmt.Sprintf("toolu_nowhole%d%s", i, name[:2]), a5000+"; rm -rf /x", pad)
			if svc.Ingest == nil {
				// The session is one Logbook has seen.
				prepared, _ := claude.PrepareHook(p)
				id := ulid.Make()
				if _, err := r.ing.Hook(t.Context(), claude.Entry{ID: id.String(), Time: ulid.Time(id.Time()), Payload: prepared}); err != nil {
					t.Fatal(err)
				}
			}
			v, err = ask(svc, p, "-")
			if err != nil || v.Decision != DecideDeny || v.Outcome != events.ReviewUnavailable || v.By.Name != judgeRule || !strings.Contains(v.Reason, "lacks the whole tool input") {
				t.Errorf("%s, %s, cut without the whole input: %+v %v, want deny unjudged", event, name, v, err)
			}
		}

		over := `{"command":"ls","description":"` + strings.Repeat("o", MaxJudgedInput) + `"}`
		v, err = ask(svc, payload(event, fmt.Sprintf("toolu_over%d", i), "ls", pad), over)
		want := fmt.Sprintf("too large to judge (%d bytes, cap %d)", len(over), MaxJudgedInput)
		if err != nil || v.Decision != DecideDeny || !strings.Contains(v.Reason, want) {
			t.Errorf("%s, over the cap: %+v %v, want deny %q", event, v, err, want)
		}

		small := payload(event, fmt.Sprintf("toolu_small%d", i), "ls", 0)
		if _, err := ask(svc, small, `{"command":"rm -rf /x"}`); !errors.Is(err, events.ErrMalformed) {
			t.Errorf("%s, an input beside an uncut payload that is not its own: %v, want ErrMalformed", event, err)
		}
		if _, err := ask(svc, chained, `["not an object"]`); !errors.Is(err, events.ErrMalformed) {
			t.Errorf("%s, an input that is no object: %v, want ErrMalformed", event, err)
		}
	}

	// What is recorded of each call is the cut payload, never the whole.
	cut := 0
	for i := 1; i <= n; i++ {
		recs, _, err := r.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("9a7e0000-0000-4000-8000-%012d", i)})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if o, ok := events.Observed(rec.Envelope.Data); ok && o.Cut != nil {
				cut++
			}
		}
	}
	if cut != 10 {
		t.Errorf("%d observations recorded cut, want the 10 padded calls recorded'", cut)
	}
}

// TestRecordLocal_CutPayload: the verdict a hook kept beside a payload it
// cut names the whole input's digest, and the review recorded for it
// carries that digest, not the cut copy's; so a review the server's gate
// opened on the whole input is recognised as the same call's and left to
// the server.
func TestRecordLocal_CutPayload(t *testing.T) {
	r := newRig(t, "")
	r.hook("SessionStart", map[string]any{"source": "startup"})
	entry := func(useID string) (claude.Entry, []byte) {
		b, _ := json.Marshal(map[string]any{"session_id": r.sess, "transcript_path": "/nonexistent/x.jsonl", "cwd": "/tmp", "hook_event_name": EventPreToolUse,
			"tool_name": "Bash", "tool_use_id": useID, "tool_input": map[string]any{"command": "ls; rm -rf /x", "description": strings.Repeat("d", 300<<10)}})
		prepared, err := claude.PrepareHook(b)
		if err != nil {
			t.Fatal(err)
		}
		lv := LocalVerdict("the tool input is too large to judge", time.Now(), time.Minute)
		lv.ArgsDigest = sha(wholeInput(t, b))
		id := ulid.Make()
		return claude.Entry{ID: id.String(), Time: ulid.Time(id.Time()), Payload: prepared, Verdict: &lv}, b
	}
	e, b := entry("toolu_cut")
	_, st, err := r.ing.HookThen(t.Context(), e, r.gate.RecordLocal(e))
	if err != nil {
		t.Fatal(err)
	}
	d, ok := st.DecidedReview("toolu_cut")
	if want := sha(wholeInput(t, b)); !ok || d.Verdict != events.VerdictDeny || d.ArgsDigest != want {
		t.Errorf("decided %+v %v, want deny with args digest %s", d, ok, want)
	}

	// The server took the call, whole, before it went away.
	held, hb := entry("toolu_held")
	agg := events.Aggregate{Kind: events.KindSession, ID: r.sess}
	if _, err := r.ing.Hook(t.Context(), claude.Entry{ID: held.ID, Time: held.Time, Payload: held.Payload}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.gate.Sessions.Execute(t.Context(), agg, func(s session.State) (events.Decision, error) {
		rq := events.ReviewRequested{ReviewID: "toolu_held", Tool: "Bash", Action: "ls; rm -rf /x", Event: EventPreToolUse, ArgsDigest: sha(wholeInput(t, hb)), BudgetMS: 60000}
		return session.Decide(s, session.RequestReview{Review: rq, At: time.Now().UTC(), Cause: events.Cause{Kind: events.CauseGate, Event: EventPreToolUse, Detail: "Bash", Ref: held.ID}})
	}); err != nil {
		t.Fatal(err)
	}
	if _, st, err = r.ing.HookThen(t.Context(), held, r.gate.RecordLocal(held)); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.PendingReview("toolu_held"); !ok || len(st.Decided) != 1 {
		t.Errorf("the server's open review of the whole input: pending %v, decided %+v; want it left to the server", ok, st.Decided)
	}
}
