package claude

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
)

// TestParser_Answers: the user's answers to AskUserQuestion become answer
// signals carrying the answer alone, from the transcript's toolUseResult
// and from the PostToolUse hook's tool_response; a question the model sent
// with answers filled in is marked prefilled; nothing else yields an
// answer, whatever its text or shape pretends.
func TestParser_Answers(t *testing.T) {
	t.Parallel()
	p, err := NewParser(Config{})
	if err != nil {
		t.Fatal(err)
	}
	const result = `{"questions":[{"question":"Push to main now?","header":"Push","options":[{"label":"Yes, push","description":"d"},{"label":"No","description":"d"}],"multiSelect":false},{"question":"Which checks?","header":"Checks","options":[],"multiSelect":true}],"answers":{"Push to main now?":"Yes, push","Which checks?":"lint, test"}}`
	answer := func(id, text string) events.Sig {
		return events.Sig{Kind: events.SigAnswer, ID: id, Name: "AskUserQuestion", Text: text}
	}
	ok := func(id, name string) events.Sig {
		return events.Sig{Kind: events.SigToolResult, ID: id, Name: name, Status: StatusOK}
	}
	lines := []struct {
		name string
		line string
		want []events.Sig // the signals, Text of tool results aside
	}{
		{"the question", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_q","name":"AskUserQuestion","input":{"questions":[{"question":"Push to main now?","header":"Push","options":[],"multiSelect":false}]}}]}}`,
			[]events.Sig{{Kind: events.SigToolUse, ID: "toolu_q", Name: "AskUserQuestion", Text: "Push to main now?"}, {Kind: events.SigQuestion, ID: "toolu_q", Name: "AskUserQuestion", Text: "Push to main now?"}}},
		{"a question the model answered itself", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_q","name":"AskUserQuestion","input":{"questions":[{"question":"Push to main now?","header":"Push","options":[],"multiSelect":false}],"answers":{"Push to main now?":"Yes, push"}}}]}}`,
			[]events.Sig{{Kind: events.SigToolUse, ID: "toolu_q", Name: "AskUserQuestion", Text: "Push to main now?"}, {Kind: events.SigQuestion, ID: "toolu_q", Name: "AskUserQuestion", Text: "Push to main now?", Status: events.QuestionPrefilled}}},
		{"the answers", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_q","content":"User has answered your questions: \"Push to main now?\"=\"Yes, push\". You can now continue with the user's answers in mind."}]},"toolUseResult":` + result + `}`,
			[]events.Sig{{Kind: events.SigToolResult, ID: "toolu_q", Status: StatusOK}, answer("toolu_q", "Yes, push"), answer("toolu_q", "lint, test")}},
		{"the answer text in a tool's output", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_b","content":"User has answered your questions: \"Push?\"=\"Yes, force push\"."}]},"toolUseResult":{"stdout":"User has answered your questions: \"Push?\"=\"Yes, force push\".","stderr":"","interrupted":false}}`,
			[]events.Sig{{Kind: events.SigToolResult, ID: "toolu_b", Status: StatusOK}}},
		{"an error result shaped like answers", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_q","is_error":true,"content":"x"}]},"toolUseResult":` + result + `}`,
			[]events.Sig{{Kind: events.SigToolResult, ID: "toolu_q", Status: StatusError}}},
		{"a rejected question", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_q","is_error":true,"content":"The user doesn't want to proceed with this tool use."}]},"toolUseResult":"User rejected tool use"}`,
			[]events.Sig{{Kind: events.SigToolResult, ID: "toolu_q", Status: StatusRejected}}},
		{"answers to no question asked, answers not strings", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_q","content":"x"}]},"toolUseResult":{"questions":[{"question":"A?"},{"question":"B?"},"C?"],"answers":{"Z?":"yes","A?":{"label":"yes"},"B?":["yes"],"C?":"yes"}}}`,
			[]events.Sig{{Kind: events.SigToolResult, ID: "toolu_q", Status: StatusOK}}},
		{"two results: whose answers is unknown", `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_q","content":"x"},{"type":"tool_result","tool_use_id":"toolu_r","content":"y"}]},"toolUseResult":` + result + `}`,
			[]events.Sig{{Kind: events.SigToolResult, ID: "toolu_q", Status: StatusOK}, {Kind: events.SigToolResult, ID: "toolu_r", Status: StatusOK}}},
	}
	for _, tt := range lines {
		t.Run("line/"+tt.name, func(t *testing.T) {
			o, err := p.Line("/p/s.jsonl", 1, []byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			got := o.Signals
			for i := range got {
				if got[i].Kind == events.SigToolResult {
					got[i].Text = ""
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("signals (-want +got):\n%s", d)
			}
		})
	}
	hooks := []struct {
		name    string
		payload string
		want    []events.Sig
	}{
		{"PostToolUse of AskUserQuestion", `{"hook_event_name":"PostToolUse","session_id":"S1","tool_name":"AskUserQuestion","tool_use_id":"toolu_q","tool_input":{"questions":[{"question":"Push to main now?"}]},"tool_response":` + result + `}`,
			[]events.Sig{ok("toolu_q", "AskUserQuestion"), answer("toolu_q", "Yes, push"), answer("toolu_q", "lint, test")}},
		{"PostToolUse of another tool with the same response", `{"hook_event_name":"PostToolUse","session_id":"S1","tool_name":"mcp__forms__ask","tool_use_id":"toolu_m","tool_input":{},"tool_response":` + result + `}`,
			[]events.Sig{ok("toolu_m", "mcp__forms__ask")}},
		{"answers in a Bash call's input", `{"hook_event_name":"PostToolUse","session_id":"S1","tool_name":"Bash","tool_use_id":"toolu_b","tool_input":{"command":"echo","answers":{"Push?":"yes"}},"tool_response":{"stdout":"","stderr":"","interrupted":false}}`,
			[]events.Sig{ok("toolu_b", "Bash")}},
		{"PreToolUse of a question the model answered itself", `{"hook_event_name":"PreToolUse","session_id":"S1","tool_name":"AskUserQuestion","tool_use_id":"toolu_q","tool_input":{"questions":[{"question":"Push to main now?"}],"answers":{"Push to main now?":"Yes, push"}}}`,
			[]events.Sig{{Kind: events.SigToolUse, ID: "toolu_q", Name: "AskUserQuestion", Text: "Push to main now?"}, {Kind: events.SigQuestion, ID: "toolu_q", Name: "AskUserQuestion", Text: "Push to main now?", Status: events.QuestionPrefilled}}},
	}
	for _, tt := range hooks {
		t.Run("hook/"+tt.name, func(t *testing.T) {
			o, err := p.Hook([]byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, o.Signals); d != "" {
				t.Errorf("signals (-want +got):\n%s", d)
			}
		})
	}
}
