package bench

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"time"
)

// SynthTranscript is a synthetic Claude Code transcript on disk, shaped
// like the recorded ones in testdata/claude/projects: a permission-mode
// line, then turns of six lines (prompt, thinking, tool use, tool result,
// reply, turn duration). `logbook bench` imports them; the crash soak grows
// them between imports. Line n of a session is always the same bytes.
type SynthTranscript struct {
	Path    string // the .jsonl file
	Session string // the sessionId every line carries
	Agent   string // the agentId of a subagent's transcript; "" for a main one
	Lines   int    // complete lines in the file
	torn    int    // bytes of line Lines+1 already written without its end
}

// synthSessionID returns the id of synthetic session i, UUID-shaped like
// Claude Code's.
func synthSessionID(i int) string {
	return fmt.Sprintf("5e551011-0000-4000-8000-%012d", i)
}

// NewSynthTranscripts creates, under dir/-home-user-synthetic, sessions
// empty transcripts and, when subagents is set, one empty subagent
// transcript for the first session (<session>/subagents/agent-<id>.jsonl).
func NewSynthTranscripts(dir string, sessions int, subagents bool) ([]*SynthTranscript, error) {
	return NewSynthTranscriptsFrom(dir, 0, sessions, subagents)
}

// NewSynthTranscriptsFrom is NewSynthTranscripts with the sessions
// numbered from first+1 on (synthetic session ids are numbers, up to 12
// digits): runs that must not meet each other's sessions in one log take
// ranges of their own.
func NewSynthTranscriptsFrom(dir string, first, sessions int, subagents bool) ([]*SynthTranscript, error) {
	proj := filepath.Join(dir, "-home-user-synthetic")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		return nil, err
	}
	var ts []*SynthTranscript
	for i := range sessions {
		id := synthSessionID(first + i + 1)
		ts = append(ts, &SynthTranscript{Path: filepath.Join(proj, id+".jsonl"), Session: id})
	}
	if subagents && sessions > 0 {
		sub := filepath.Join(proj, ts[0].Session, "subagents")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		ts = append(ts, &SynthTranscript{Path: filepath.Join(sub, "agent-a5e55.jsonl"), Session: ts[0].Session, Agent: "a5e55"})
	}
	for _, t := range ts {
		if err := os.WriteFile(t.Path, nil, 0o644); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// Aggregate returns the session aggregate id the transcript imports into.
func (t *SynthTranscript) Aggregate() string {
	if t.Agent != "" {
		return "agent-" + t.Agent
	}
	return t.Session
}

// Grow appends n complete lines to the file, finishing a torn line first
// (it counts as one of the n). With torn set it then writes the first
// half of the next line without its newline, as Claude Code leaves a line
// it is still writing; the next Grow completes it.
func (t *SynthTranscript) Grow(n int, torn bool) error {
	f, err := os.OpenFile(t.Path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	var b []byte
	for range n {
		line := t.line(t.Lines + 1)
		b = append(b, line[t.torn:]...)
		b = append(b, '\n')
		t.Lines++
		t.torn = 0
	}
	if torn {
		line := t.line(t.Lines + 1)
		t.torn = len(line) / 2
		b = append(b, line[:t.torn]...)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// line returns line n (1-based) of the transcript, without its newline.
func (t *SynthTranscript) line(n int) []byte {
	h := fnv.New32a()
	h.Write([]byte(t.Session + "/" + t.Agent))
	seed := h.Sum32()
	uuid := func(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", seed, n) }
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Second).Format("2006-01-02T15:04:05.000Z")
	if n == 1 {
		return fmt.Appendf(nil, `{"type":"permission-mode","permissionMode":"default","sessionId":%q}`, t.Session)
	}
	parent := "null"
	if n > 2 {
		parent = fmt.Sprintf("%q", uuid(n-1))
	}
	side, agent := "false", ""
	if t.Agent != "" {
		side, agent = "true", fmt.Sprintf(`"agentId":%q,`, t.Agent)
	}
	turn := (n-2)/6 + 1
	tool := fmt.Sprintf("toolu_%08x_%d", seed, turn)
	head := fmt.Sprintf(`{"isSidechain":%s,%s"userType":"external","entrypoint":"cli","cwd":"/home/user/project","sessionId":%q,"version":"2.1.140","gitBranch":"main","parentUuid":%s,`,
		side, agent, t.Session, parent)
	usage := `"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":5,"cache_read_input_tokens":100}}}`
	switch (n - 2) % 6 {
	case 0:
		return fmt.Appendf(nil, `%s"type":"user","uuid":%q,"timestamp":%q,"message":{"role":"user","content":"Run the tests of package %d and fix what fails."},"promptId":"P%d","permissionMode":"default"}`,
			head, uuid(n), at, turn, turn)
	case 1:
		return fmt.Appendf(nil, `%s"type":"assistant","uuid":%q,"timestamp":%q,"requestId":"req_%d","message":{"model":"claude-opus-4-7","id":"msg_%d_a","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"Run the package's tests first, then read the failures.","signature":"c2lnbmF0dXJl"}],"stop_reason":"tool_use",%s`,
			head, uuid(n), at, turn, turn, usage)
	case 2:
		return fmt.Appendf(nil, `%s"type":"assistant","uuid":%q,"timestamp":%q,"requestId":"req_%d","message":{"model":"claude-opus-4-7","id":"msg_%d_b","type":"message","role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"go test ./pkg%d/...","description":"Run the tests"}}],"stop_reason":"tool_use",%s`,
			head, uuid(n), at, turn, turn, tool, turn, usage)
	case 3:
		return fmt.Appendf(nil, `%s"type":"user","uuid":%q,"timestamp":%q,"message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":"ok   pkg%d 0.412s","is_error":false}]},"promptId":"P%d","toolUseResult":{"stdout":"ok   pkg%d 0.412s","stderr":"","interrupted":false,"isImage":false}}`,
			head, uuid(n), at, tool, turn, turn, turn)
	case 4:
		return fmt.Appendf(nil, `%s"type":"assistant","uuid":%q,"timestamp":%q,"requestId":"req_%d","message":{"model":"claude-opus-4-7","id":"msg_%d_c","type":"message","role":"assistant","content":[{"type":"text","text":"The tests of package %d pass; nothing needed fixing."}],"stop_reason":"end_turn",%s`,
			head, uuid(n), at, turn, turn, turn, usage)
	default:
		return fmt.Appendf(nil, `%s"type":"system","uuid":%q,"timestamp":%q,"subtype":"turn_duration","durationMs":4200,"messageCount":%d,"isMeta":false}`,
			head, uuid(n), at, 6*turn)
	}
}
