package claude

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkPrepareHook measures what a hook process does with a payload
// before it sends it: a small PreToolUse, and a 6 MiB PostToolUse (a
// tool's whole output), which is cut to MaxHookSend. Run with
//
//	go test -run '^$' -bench PrepareHook -count 5 ./adapters/claude/
func BenchmarkPrepareHook(b *testing.B) {
	small := []byte(`{"session_id":"s1","cwd":"/home/user/p","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"toolu_1"}`)
	line := strings.Repeat("x", 99) + "\\n"
	big := []byte(fmt.Sprintf(`{"session_id":"s1","cwd":"/home/user/p","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"cat big"},"tool_use_id":"toolu_2","tool_response":{"stdout":"%s","stderr":"","interrupted":false}}`,
		strings.Repeat(line, 6<<20/len(line))))
	for _, c := range []struct {
		name    string
		payload []byte
	}{{"small", small}, {"6MiB", big}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.payload)))
			for b.Loop() {
				if _, err := PrepareHook(c.payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
