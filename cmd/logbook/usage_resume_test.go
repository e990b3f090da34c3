package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resumeThread is the thread id of the rollouts writeResumed writes.
const resumeThread = "019e6000-0000-7000-8000-000000000001"

// writeResumed writes a Codex thread as `codex resume` leaves it, three
// rollout files whose token_count running totals go on from the file
// before (input/output 2000/100 and 5000/300; 6000/350 and 7000/400;
// 8000/500), each call with its last_token_usage, and returns their
// paths in time order.
func writeResumed(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sessions", "2026", "11", "20")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	segs := [][][2]int{{{2000, 100}, {5000, 300}}, {{6000, 350}, {7000, 400}}, {{8000, 500}}}
	var paths []string
	prev := [2]int{}
	for n, seg := range segs {
		var b strings.Builder
		line := func(min int, typ, payload string) {
			fmt.Fprintf(&b, `{"timestamp":"2026-11-20T1%d:%02d:00.000Z","type":%q,"payload":%s}`+"\n", n, min, typ, payload)
		}
		line(0, "session_meta", `{"id":"`+resumeThread+`","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/home/user/shop","originator":"codex-tui","cli_version":"0.150.0","source":"cli","model_provider":"openai"}`)
		for i, tot := range seg {
			turn := fmt.Sprintf("019e6000-000%d-7%03d-8000-000000000000", n, i)
			line(2*i+1, "turn_context", `{"turn_id":"`+turn+`","cwd":"/home/user/shop","model":"gpt-5.5","sandbox_policy":{"type":"workspace-write"}}`)
			line(2*i+1, "event_msg", `{"type":"task_started","turn_id":"`+turn+`"}`)
			line(2*i+1, "event_msg", fmt.Sprintf(`{"type":"user_message","message":"step %d.%d"}`, n, i))
			line(2*i+1, "event_msg", fmt.Sprintf(`{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"output_tokens":%d,"reasoning_output_tokens":0,"total_tokens":%d},"last_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"output_tokens":%d,"reasoning_output_tokens":0,"total_tokens":%d}}}`,
				tot[0], tot[1], tot[0]+tot[1], tot[0]-prev[0], tot[1]-prev[1], tot[0]-prev[0]+tot[1]-prev[1]))
			line(2*i+1, "event_msg", `{"type":"task_complete","turn_id":"`+turn+`"}`)
			prev = tot
		}
		p := filepath.Join(dir, fmt.Sprintf("rollout-2026-11-20T1%d-00-00-%s.jsonl", n, resumeThread))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// lbRun runs logbook with args and returns what it printed.
func lbRun(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := runCLIAgain(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("logbook %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// TestUsage_ResumedThreadAnyOrder imports the three files of a resumed
// Codex thread in every order, with 1 to 3 workers, and gets one session
// holding the thread's spend once (8000 input, 500 output tokens, the
// last running total) and the same state hash every time. Imported one
// file at a time, in every order, the spend is the same too.
func TestUsage_ResumedThreadAnyOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("24 imports")
	}
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	paths := writeResumed(t)
	perms := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	type result struct {
		input, output int64
		hash          string
	}
	read := func(data string) result {
		var rep struct {
			Lines []struct {
				Key    string `json:"key"`
				Tokens struct {
					Input  int64 `json:"input"`
					Output int64 `json:"output"`
				} `json:"tokens"`
			} `json:"lines"`
		}
		if err := json.Unmarshal([]byte(lbRun(t, "--data", data, "--json", "usage", "--by", "session")), &rep); err != nil {
			t.Fatal(err)
		}
		var r result
		for _, l := range rep.Lines {
			if l.Key != resumeThread {
				t.Fatalf("a line of session %s: the files are one thread's", l.Key)
			}
			r.input += l.Tokens.Input
			r.output += l.Tokens.Output
		}
		var show struct {
			Session json.RawMessage `json:"session"`
		}
		if err := json.Unmarshal([]byte(lbRun(t, "--data", data, "--json", "session", "show", resumeThread)), &show); err != nil {
			t.Fatal(err)
		}
		// What names this import run itself, its receipt time and the
		// id of the observation it stored last, differs between two runs
		// of the same files; everything else is the thread's.
		var row map[string]json.RawMessage
		if err := json.Unmarshal(show.Session, &row); err != nil {
			t.Fatal(err)
		}
		delete(row, "received_at")
		delete(row, "observed_ref")
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		r.hash = fmt.Sprintf("%x", sha256.Sum256(b))
		return r
	}
	want := result{input: 8000, output: 500}
	// Three files: one worker reads them in turn, two race a pair, three
	// race all of them; more workers than files add nothing to race.
	for _, p := range perms {
		for w := 1; w <= len(p); w++ {
			data := filepath.Join(t.TempDir(), "data")
			args := []string{"--data", data, "import", "codex", "--workers", fmt.Sprint(w)}
			for _, i := range p {
				args = append(args, paths[i])
			}
			lbRun(t, args...)
			got := read(data)
			if want.hash == "" {
				want.hash = got.hash
			}
			if got != want {
				t.Fatalf("order %v, %d workers: %+v, want %+v", p, w, got, want)
			}
		}
	}
	for _, p := range perms {
		data := filepath.Join(t.TempDir(), "data")
		for _, i := range p {
			lbRun(t, "--data", data, "import", "codex", paths[i])
		}
		if got := read(data); got.input != want.input || got.output != want.output {
			t.Errorf("imported one file at a time in order %v: %d/%d tokens, want %d/%d", p, got.input, got.output, want.input, want.output)
		}
	}
}
