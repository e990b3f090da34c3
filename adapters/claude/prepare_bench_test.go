package claude

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkPrepareHook measures what a hook process does with a payload
// before it sends it: a small PreToolUse; a 6 MiB PostToolUse (a tool's
// whole output), which is cut to MaxHookSend; and two it refuses: a
// 4.8 MB response of 300,000 keys and 200,000 levels of nesting. Run with
//
//	go test -run '^$' -bench PrepareHook -count 5 ./adapters/claude/
func BenchmarkPrepareHook(b *testing.B) {
	small := []byte(`{"session_id":"s1","cwd":"/home/user/p","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"toolu_1"}`)
	line := strings.Repeat("x", 99) + "\\n"
	big := []byte(fmt.Sprintf(`{"session_id":"s1","cwd":"/home/user/p","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"cat big"},"tool_use_id":"toolu_2","tool_response":{"stdout":"%s","stderr":"","interrupted":false}}`,
		strings.Repeat(line, 6<<20/len(line))))
	var keys strings.Builder
	keys.WriteString(`{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"toolu_3","tool_response":{`)
	for i := range 300_000 {
		fmt.Fprintf(&keys, `"k%06d":"v",`, i)
	}
	keys.WriteString(`"end":0}}`)
	deep := `{"session_id":"s1","hook_event_name":"PostToolUse","tool_response":` + strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + "}"
	for _, c := range []struct {
		name    string
		payload []byte
		refused bool
	}{{"small", small, false}, {"6MiB", big, false}, {"300k-keys", []byte(keys.String()), true}, {"200k-levels", []byte(deep), true}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.payload)))
			for b.Loop() {
				if _, err := PrepareHook(c.payload); (err != nil) != c.refused {
					b.Fatal(err)
				}
			}
		})
	}
}
