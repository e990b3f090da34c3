package shell_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/gate/shell"
)

// The differential test runs each command under real bash in a box
// (box_test.go) and compares what bash ran with what the gate read:
//
//   - a miss: bash ran a program that no command of shell.Read names
//     (and the script is neither opaque nor faulty, which the gate
//     would refuse to allow whatever it holds);
//   - a bypass: under diffPolicy, gate.Decide said allow while bash ran
//     a program the allow list does not cover, or a denied one.

// diffPolicy is the policy bypasses are judged by.
const diffPolicy = `
allow = ["Bash(ls:*)", "Bash(echo:*)", "Bash(cat:*)", "Bash(git status:*)", "Bash(git log:*)", "Bash(grep:*)"]
deny  = ["Bash(rm -rf:*)", "Bash(curl:*)", "Bash(wget:*)"]
`

// allowed are diffPolicy's allow rules as prefixes of what ran.
var allowed = []string{"ls", "echo", "cat", "git status", "git log", "grep"}

// covered reports whether what ran is covered by an allow rule: its
// name and arguments joined by spaces are a rule or start with one and
// a space.
func covered(r ran) bool {
	j := r.Joined()
	for _, p := range allowed {
		if j == p || strings.HasPrefix(j, p+" ") {
			return true
		}
	}
	return false
}

// denied reports whether what ran is what a deny rule names.
func denied(r ran) bool {
	return strings.HasPrefix(r.Joined(), "rm -rf") || r.Name == "curl" || r.Name == "wget"
}

// judge is the gate under test: how it reads a command and what it
// decides for it (ActionAllow, ActionDeny, ActionReview or "").
type judge struct {
	read   func(cmd string) *shell.Script
	decide func(cmd string) string
}

// realJudge is shell.Read and gate.Decide under diffPolicy.
func realJudge(t testing.TB) judge {
	t.Helper()
	p, err := gate.ParsePolicy("differential.toml", []byte(diffPolicy))
	if err != nil {
		t.Fatal(err)
	}
	return judge{
		read: shell.Read,
		decide: func(cmd string) string {
			in, err := json.Marshal(map[string]string{"command": cmd})
			if err != nil {
				panic(err)
			}
			c := gate.Call{Tool: "Bash", Input: in, Dir: "/work/project"}
			return gate.Decide([]*gate.Policy{p}, c).Action
		},
	}
}

// finding is one disagreement between the gate and bash.
type finding struct {
	Kind    string // "miss", "bypass", "panic" (the gate panicked), "box" (the box broke)
	Label   string // how the command was made
	Command string
	Ran     string // what bash ran, for a miss or a bypass
	Detail  string
}

func (f finding) String() string {
	s := fmt.Sprintf("%s [%s] %q", f.Kind, f.Label, f.Command)
	if f.Ran != "" {
		s += " ran " + f.Ran
	}
	if f.Detail != "" {
		s += ": " + f.Detail
	}
	return s
}

// check returns what the gate got wrong about cmd, which ran o.
func (j judge) check(label, cmd string, o outcome) []finding {
	var fs []finding
	add := func(kind, r, detail string) {
		fs = append(fs, finding{Kind: kind, Label: label, Command: cmd, Ran: r, Detail: detail})
	}
	if o.Err != nil {
		add("box", "", o.Err.Error())
		return fs
	}
	sc, err := try(func() *shell.Script { return j.read(cmd) })
	if err != nil {
		add("panic", "", "shell.Read: "+err.Error())
		return fs
	}
	if len(sc.Faults) == 0 && !sc.Opaque() {
		for _, r := range o.Ran {
			if !judged(sc, r.Name) {
				add("miss", r.String(), "the gate read "+programs(sc))
			}
		}
	}
	// A command the agent sends is JSON, so valid UTF-8: the gate never
	// sees other bytes.
	if !utf8.ValidString(cmd) {
		return fs
	}
	action, err := try(func() string { return j.decide(cmd) })
	if err != nil {
		add("panic", "", "gate.Decide: "+err.Error())
		return fs
	}
	if action != gate.ActionAllow {
		return fs
	}
	for _, r := range o.Ran {
		switch {
		case denied(r):
			add("bypass", r.String(), "allowed, and a denied program ran")
		case !covered(r):
			add("bypass", r.String(), "allowed, and a program no allow rule covers ran")
		}
	}
	return fs
}

// try calls f, turning a panic into an error.
func try[T any](f func() T) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v at %s", p, panicSite(debug.Stack()))
		}
	}()
	return f(), nil
}

// panicSite returns the file:line lines of a panic's stack below the
// runtime's own frames: where the panic happened and who called it.
func panicSite(stack []byte) string {
	var at []string
	lines := strings.Split(string(stack), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "\t") || i == 0 || strings.Contains(l, "/src/runtime/") ||
			strings.Contains(lines[i-1], "runtime/debug.Stack") || strings.Contains(lines[i-1], "shell_test.try") {
			continue
		}
		f := strings.TrimSpace(l)
		if j := strings.LastIndex(f, " +0x"); j > 0 {
			f = f[:j]
		}
		at = append(at, filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f))
		if len(at) == 3 {
			break
		}
	}
	return strings.Join(at, " < ")
}

// judged reports whether some command of sc may run program p: its
// program's base name is p, or could be p where the reading has a part
// known only at run time. Wild may hold a word break, so a program
// reading with Wild may be any program; WildPart may hold slashes, so
// past the last one only the literal tail must end p.
func judged(sc *shell.Script, p string) bool {
	for _, c := range sc.Commands {
		prog := c.Program()
		switch m := strings.LastIndex(prog, shell.WildPart); {
		case prog == "":
		case strings.Contains(prog, shell.Wild):
			return true
		case m >= 0 && m > strings.LastIndexByte(prog, '/'):
			if strings.HasSuffix(p, prog[m+1:]) {
				return true
			}
		case shell.Base(prog) == p:
			return true
		}
	}
	return false
}

// programs lists the programs of sc's commands, for a report.
func programs(sc *shell.Script) string {
	var ps []string
	for _, c := range sc.Commands {
		ps = append(ps, strconv.Quote(c.Program()))
	}
	return "[" + strings.Join(ps, " ") + "]"
}

// namesIn returns the words of cmd that could name a program: its raw
// tokens and the decoded words of shell.Read, so each gets a shim.
func namesIn(cmd string) []string {
	var ns []string
	for _, f := range strings.FieldsFunc(cmd, func(r rune) bool {
		return !(r == '.' || r == '_' || r == '-' || r == '+' || r == '[' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		if len(f) <= 64 {
			ns = append(ns, f)
		}
	}
	sc, err := try(func() *shell.Script { return shell.Read(cmd) })
	if err != nil {
		return ns
	}
	for _, c := range sc.Commands {
		for _, w := range c.Args {
			if w.Static && len(w.Value) <= 200 {
				ns = append(ns, shell.Base(w.Value))
			}
		}
	}
	return ns
}

// workers is how many boxes run at once.
func workers() int {
	return min(4, max(2, runtime.GOMAXPROCS(0)))
}

// TestBox_Records proves the box is a faithful witness: it records
// what bash runs with every byte of its arguments, by the file run
// (not argv[0]), through nested real shells and background jobs, keeps
// each command's record its own, writes nowhere but its tmpfs, has no
// network, and kills a command past the time limit.
func TestBox_Records(t *testing.T) {
	k := newKit(t, 300*time.Millisecond)
	b, err := k.start()
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	tests := []struct {
		cmd  string
		want []string
	}{
		{"ls -la", []string{"ls -la"}},
		{"echo hi; true; printf x", nil}, // builtins run nothing
		{"/bin/rm -rf /tmp/x; /usr/local/bin/curl u", []string{"rm -rf /tmp/x", "curl u"}},
		{"exec -a ls rm -rf /tmp/x", []string{"rm -rf /tmp/x"}},
		{"hash -p /usr/bin/wget ls; ls y", []string{"wget y"}},
		{`bash -c 'sh -c "dash -c \"curl http://127.0.0.1:1/x\""'`, []string{"curl http://127.0.0.1:1/x"}},
		{`printf -v x '\xff\n\t'; rm "$x" '' "a b"`, []string{`rm "\xff\n\t" "" "a b"`}},
		{"cat <<EOF | bash\nwget z\nEOF", []string{"cat", "wget z"}},
		{"(for i in {1..3000}; do :; done; wget late) & echo", []string{"wget late"}},
		{"true", nil}, // the background job of the last command is not this one's
		{"no-such-program x; ls", []string{"ls"}},
		{"echo x > /usr/bin/ls || rm ro; echo x > /etc/x || rm ro2", []string{"rm ro", "rm ro2"}},
		{"echo x > /dev/tcp/127.0.0.1/22 || curl nonet", []string{"curl nonet"}},
		{"kill -9 -1; ls after", []string{"ls after"}},
		{"while :; do :; done", nil},
		{"ls alive", []string{"ls alive"}},
	}
	for _, tt := range tests {
		start := time.Now()
		rs, err := b.run(tt.cmd)
		if err != nil {
			t.Fatalf("%q: %v", tt.cmd, err)
		}
		var got []string
		for _, r := range rs {
			got = append(got, r.String())
		}
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%q ran %q, want %q", tt.cmd, got, tt.want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%q took %v, past the limit of %v", tt.cmd, d, k.limit)
		}
	}
}

// TestOracle_CatchesPlanted proves the oracle is not blind: a gate
// that reads nothing misses every program bash runs, and a gate that
// allows everything is a bypass as soon as a denied or uncovered
// program runs, while the real reader judges those same programs.
func TestOracle_CatchesPlanted(t *testing.T) {
	k := newKit(t, boxLimit)
	blind := judge{
		read:   func(string) *shell.Script { return &shell.Script{} },
		decide: func(string) string { return gate.ActionAllow },
	}
	real := realJudge(t)
	tests := []struct {
		cmd          string
		miss, bypass int // from the blind gate
	}{
		{cmd: "rm -rf /tmp/x", miss: 1, bypass: 1},
		{cmd: "ls -la && curl http://127.0.0.1:1/x", miss: 2, bypass: 1},
		{cmd: "git status; git log -1", miss: 2},
		{cmd: "echo hi", miss: 0},
		{cmd: "go test ./...", miss: 1, bypass: 1},
	}
	var cmds []string
	for _, tt := range tests {
		cmds = append(cmds, tt.cmd)
	}
	outs := k.runAll(cmds, nil, 2)
	for i, tt := range tests {
		var miss, bypass int
		for _, f := range blind.check("planted", tt.cmd, outs[i]) {
			switch f.Kind {
			case "miss":
				miss++
			case "bypass":
				bypass++
			default:
				t.Errorf("%q: %v", tt.cmd, f)
			}
		}
		if miss != tt.miss || bypass != tt.bypass {
			t.Errorf("blind gate on %q: got %d misses and %d bypasses, want %d and %d", tt.cmd, miss, bypass, tt.miss, tt.bypass)
		}
		for _, f := range real.check("planted", tt.cmd, outs[i]) {
			t.Errorf("real gate on %q: %v", tt.cmd, f)
		}
	}
}

// TestGateAgainstBash proves, on a sample of agent commands (the seed
// corpus, recorded sessions when present, grammar-made and mutated
// commands), that the gate reads every program bash runs and never
// allows a command under which bash runs what the policy does not
// allow. LOGBOOK_DIFF_N sets the sample size (default 2000),
// LOGBOOK_DIFF_SEED the generator's seed, and LOGBOOK_DIFF_OUT a file
// to write every finding to, one JSON object a line.
func TestGateAgainstBash(t *testing.T) {
	n := envInt(t, "LOGBOOK_DIFF_N", 2000)
	seed := uint64(envInt(t, "LOGBOOK_DIFF_SEED", 1))
	k := newKit(t, boxLimit)
	j := realJudge(t)
	samples := sampleCommands(t, n, seed)

	start := time.Now()
	cmds := make([]string, len(samples))
	names := make([][]string, len(samples))
	for i, s := range samples {
		cmds[i] = s.Cmd
		names[i] = namesIn(s.Cmd)
	}
	outs := k.runAll(cmds, names, workers())
	// One command at a time, so that every finding is reproducible from
	// its command alone.
	var fs []finding
	for i, s := range samples {
		fs = append(fs, j.check(s.Label, s.Cmd, outs[i])...)
	}
	t.Logf("%d commands (seed %d) in %v with %d boxes at once: %d findings", len(samples), seed, time.Since(start).Round(time.Millisecond), workers(), len(fs))
	if len(fs) == 0 {
		return
	}
	sort.SliceStable(fs, func(a, b int) bool { return fs[a].Kind < fs[b].Kind })
	if out := os.Getenv("LOGBOOK_DIFF_OUT"); out != "" {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		for _, f := range fs {
			_ = enc.Encode(f)
		}
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	groups := map[string]int{}
	for _, f := range fs {
		groups[f.Kind+" "+shape(f.Label)]++
	}
	var keys []string
	for g := range groups {
		keys = append(keys, g)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d findings, by kind and the outermost way the payload was hidden:\n", len(fs))
	for _, g := range keys {
		fmt.Fprintf(&b, "  %5d %s\n", groups[g], g)
	}
	fmt.Fprintf(&b, "the first of them:\n")
	for i, f := range fs {
		if i == 40 {
			fmt.Fprintf(&b, "  … and %d more (LOGBOOK_DIFF_OUT=file lists all)\n", len(fs)-i)
			break
		}
		fmt.Fprintf(&b, "  %v\n", f)
	}
	t.Error(b.String())
}

// TestRead_Concurrent proves shell.Read may be called from several
// goroutines at once, as the gate's service does: each call reads
// what a lone call reads, without a panic.
func TestRead_Concurrent(t *testing.T) {
	var cmds []string
	for _, s := range sampleCommands(t, 3000, 1) {
		cmds = append(cmds, s.Cmd)
	}
	alone := make([]string, len(cmds))
	for i, c := range cmds {
		alone[i] = readText(c)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(cmds); i += 4 {
				if got := readText(cmds[i]); got != alone[i] {
					t.Errorf("read concurrently, %q gives\n%s\nalone\n%s", cmds[i], got, alone[i])
					return
				}
			}
		})
	}
	wg.Wait()
}

// readText returns what shell.Read makes of cmd, or its panic.
func readText(cmd string) string {
	sc, err := try(func() *shell.Script { return shell.Read(cmd) })
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, c := range sc.Commands {
		fmt.Fprintf(&b, "%q %q\n", c.Text(), c.Opaque)
	}
	fmt.Fprintf(&b, "%q\n", sc.Faults)
	return b.String()
}

// FuzzGateAgainstBash is TestGateAgainstBash one command at a time,
// from the seed corpus: the gate must read every program bash runs and
// never allow what runs a program the policy does not allow.
func FuzzGateAgainstBash(f *testing.F) {
	for _, s := range seedSamples(f) {
		f.Add(s.Cmd)
	}
	k := newKit(f, boxLimit)
	j := realJudge(f)
	var mu sync.Mutex
	var b *box
	f.Cleanup(func() {
		if b != nil {
			b.close()
		}
	})
	f.Fuzz(func(t *testing.T, cmd string) {
		if strings.ContainsRune(cmd, 0) {
			t.Skip("a NUL byte cannot reach bash -c")
		}
		k.ensure(namesIn(cmd)...)
		mu.Lock()
		defer mu.Unlock()
		var err error
		if b == nil {
			if b, err = k.start(); err != nil {
				t.Fatal(err)
			}
		}
		rs, err := b.run(cmd)
		if err != nil {
			b = nil
		}
		for _, fd := range j.check("fuzz", cmd, outcome{Ran: rs, Err: err}) {
			t.Error(fd)
		}
	})
}

// shape returns the outermost part of a sample's label: the last
// construct a grammar-made command was hidden in; for a mutated seed,
// the last wrapper a step put around it, else the mutation that added
// the payload.
func shape(label string) string {
	if rest, ok := strings.CutPrefix(label, "gen:"); ok {
		first, _, _ := strings.Cut(rest, "<")
		return "gen:" + first
	}
	if rest, ok := strings.CutPrefix(label, "mut:"); ok {
		steps := strings.Split(rest, "+")
		for i := len(steps) - 1; i >= 0; i-- {
			if strings.Contains(steps[i], "(") {
				return "mut:" + steps[i]
			}
		}
		return "mut:" + steps[len(steps)-1]
	}
	return label
}

// envInt returns the integer in environment variable name, or def.
func envInt(t testing.TB, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a number", name, s)
	}
	return n
}
