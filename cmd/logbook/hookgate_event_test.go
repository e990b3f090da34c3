package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestGatedHook_BadPayloadAnsweredForItsEvent: a gated hook whose payload
// the hook refuses answers as the payload's own event asks: a deny shaped
// for PermissionRequest to a PermissionRequest, a PreToolUse deny to a
// PreToolUse, and no permission answer at all to an event the gate does
// not judge (Stop), which fails as the recorder does, exit 1.
func TestGatedHook_BadPayloadAnsweredForItsEvent(t *testing.T) {
	data := t.TempDir()
	for _, c := range []struct {
		event, payload string
		want           string // in stdout; "" for no answer
	}{
		{"PreToolUse", `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":7}`, `"hookEventName":"PreToolUse","permissionDecision":"deny"`},
		{"PermissionRequest", `{"session_id":"s1","hook_event_name":"PermissionRequest","tool_name":7}`, `"behavior":"deny","message":"Logbook gate: deny by the gate: unusable hook payload: claude hook PermissionRequest`},
		{"Stop", `{"session_id":"s1","hook_event_name":"Stop","stop_hook_active":"notabool"}`, ""},
	} {
		t.Run(c.event, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := runCLI(t.Context(), []string{"hook", "claude", "--gate", "--budget", "2s", "--data", data}, strings.NewReader(c.payload), &out, &errb)
			if c.want == "" {
				if out.Len() != 0 || err == nil {
					t.Errorf("stdout %q, err %v; want no answer and an error", out.String(), err)
				}
				return
			}
			if err != nil || !strings.Contains(out.String(), c.want) {
				t.Errorf("stdout %q, err %v, stderr %s; want %s", out.String(), err, errb.String(), c.want)
			}
		})
	}
}
