package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestArchitecture enforces DESIGN.md's import rules: the folders are the
// architecture, and imports point inward only.
func TestArchitecture(t *testing.T) {
	t.Parallel()
	const mod = "github.com/logbook-dev/logbook"
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", mod+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// allowed[prefix] lists the module packages (by prefix) a folder may import.
	allowed := map[string][]string{
		"events":      {},
		"reducers":    {"events"},
		"projections": {"events", "reducers"},
		"sandbox":     {},
		"replay":      {"events", "reducers", "projections"},
		"adapters":    {"events", "reducers", "projections", "sandbox", "replay", "adapters"},
		"cmd":         {""},
	}
	// external[prefix] lists the outside modules a core folder may import;
	// a folder not named here may import any.
	external := map[string][]string{
		"events":   {"github.com/oklog/ulid"},
		"reducers": {},
		"sandbox":  {"github.com/creack/pty", "golang.org/x/sys"},
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, mod), "/")
		folder, _, _ := strings.Cut(rel, "/")
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, mod+"/") {
				target := strings.TrimPrefix(imp, mod+"/")
				if strings.HasPrefix(target, "cmd") && folder != "cmd" {
					t.Errorf("%s imports %s: nothing outside cmd imports cmd", p.ImportPath, imp)
				}
				ok := false
				for _, a := range allowed[folder] {
					if a == "" || target == a || strings.HasPrefix(target, a+"/") {
						ok = true
					}
				}
				if !ok && !strings.HasPrefix(target, folder+"/") && target != folder {
					t.Errorf("%s imports %s: %s/ may import only %v", p.ImportPath, imp, folder, allowed[folder])
				}
				continue
			}
			first, _, _ := strings.Cut(imp, "/")
			if !strings.Contains(first, ".") {
				continue // standard library
			}
			ext, limited := external[folder]
			if !limited {
				continue
			}
			ok := false
			for _, e := range ext {
				if strings.HasPrefix(imp, e) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s imports %s: %s/ may import only the standard library and %v", p.ImportPath, imp, folder, ext)
			}
		}
	}
}

// TestCmdCallsNoReducer keeps decisions out of the binaries: no non-test
// file under cmd/ calls a reducer's Decide, Evolve, Fold or Init. A
// reducer is called by the package whose knowledge the decision is (an
// ingester, the reconciler, a service, replay); cmd parses flags, wires
// and prints. Passing a reducer's function as a value (an
// events.Executor's Evolve) is wiring, and allowed.
func TestCmdCallsNoReducer(t *testing.T) {
	const reducers = "github.com/logbook-dev/logbook/reducers/"
	files, err := filepath.Glob("../*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	banned := map[string]bool{"Decide": true, "Evolve": true, "Fold": true, "Init": true}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		pkgs := map[string]bool{} // local names of the reducer packages f imports
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(path, reducers) {
				continue
			}
			local := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				local = imp.Name.Name
			}
			pkgs[local] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && pkgs[x.Name] && banned[sel.Sel.Name] {
				t.Errorf("%s: cmd calls %s.%s: a decision belongs in the package whose knowledge it is", fset.Position(call.Pos()), x.Name, sel.Sel.Name)
			}
			return true
		})
	}
}

// TestAgentsApart enforces DESIGN.md's rule for agent adapters: each
// agent's package (adapters/<agent>, and the packages below it) imports
// adapters/ingest, the agent-neutral engine, and never another agent's
// package, nor do its tests; the engine imports no agent's package but the
// hook spool, which every agent's hooks pass through
// (adapters/claude/hookspool). The agents are those of agents(), each in
// adapters/<its verb>.
func TestAgentsApart(t *testing.T) {
	t.Parallel()
	const mod = "github.com/logbook-dev/logbook"
	list := agents()
	agents := make([]string, 0, len(list))
	for _, a := range list {
		agents = append(agents, a.Verb)
	}
	shared := map[string]bool{"adapters/claude/hookspool": true}
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", mod+"/adapters/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// agentOf returns the agent whose package rel (a path in the module)
	// is, or "".
	agentOf := func(rel string) string {
		for _, a := range agents {
			if rel == "adapters/"+a || strings.HasPrefix(rel, "adapters/"+a+"/") {
				return a
			}
		}
		return ""
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for dec.More() {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, mod+"/")
		from := agentOf(rel)
		engine := rel == "adapters/ingest" || strings.HasPrefix(rel, "adapters/ingest/")
		if from != "" {
			seen[from] = true
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			target := strings.TrimPrefix(imp, mod+"/")
			to := agentOf(target)
			switch {
			case to == "" || to == from:
			case engine && shared[target]:
			case engine:
				t.Errorf("%s imports %s: the engine imports no agent's package", p.ImportPath, imp)
			case from != "":
				t.Errorf("%s imports %s: an agent's package imports adapters/ingest, never another agent's", p.ImportPath, imp)
			}
		}
	}
	for _, a := range agents {
		if !seen[a] {
			t.Errorf("no package adapters/%s: the agents this test keeps apart are %v", a, agents)
		}
	}
}

// TestBinaryDeps keeps test helpers out of the production binary: no
// package that cmd/logbook links may be a test library (testing and its
// subpackages, pgregory.net/rapid, go-cmp, testscript) or one of the
// project's own *test helper packages (projectionstest, sandboxtest, …).
func TestBinaryDeps(t *testing.T) {
	t.Parallel()
	const mod = "github.com/logbook-dev/logbook"
	out, err := exec.Command("go", "list", "-deps", mod+"/cmd/...").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	banned := []string{"testing", "pgregory.net/rapid", "github.com/google/go-cmp", "github.com/rogpeppe/go-internal/testscript"}
	for _, p := range strings.Fields(string(out)) {
		for _, b := range banned {
			if p == b || strings.HasPrefix(p, b+"/") {
				t.Errorf("the binary links %s, a test library", p)
			}
		}
		if last := p[strings.LastIndex(p, "/")+1:]; strings.HasPrefix(p, mod+"/") && strings.HasSuffix(last, "test") {
			t.Errorf("the binary links %s, a test helper package", p)
		}
	}
}

// TestHookBinaryDeps keeps logbook-hook, which Claude Code starts for
// every hook event, small: it links neither the server, nor the store,
// nor metrics, nor the command-line library, whose package initialization
// the hook would pay for at every start.
func TestHookBinaryDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/logbook-dev/logbook/cmd/logbook-hook").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	heavy := []string{"github.com/nats-io/nats-server", "github.com/cockroachdb/pebble", "github.com/prometheus",
		"google.golang.org/protobuf", "github.com/spf13/cobra", "github.com/logbook-dev/logbook/adapters/natslog",
		"github.com/logbook-dev/logbook/adapters/api", "github.com/logbook-dev/logbook/projections",
		// The hook speaks to serve on its Unix socket (adapters/hooksock).
		"github.com/nats-io/nats.go",
		// Whose package inits fault in pages at every start: the rules
		// and the config readers they bring (viper, go-toml, hcl, …), the
		// watcher, the reducers.
		"github.com/logbook-dev/logbook/adapters/redact", "github.com/zricethezav", "github.com/spf13/viper",
		"github.com/fsnotify", "github.com/logbook-dev/logbook/reducers",
		// Which make the binary dynamically linked, with cgo.
		"net", "os/user", "runtime/cgo",
		// The FIPS 140 module, whose dozen package inits crypto/rand and
		// crypto/sha256 bring: hookspool reads getrandom(2) itself, and
		// leaves a payload over the send cap uncut, for serve's drain to
		// cut and hash.
		"crypto", "math/big",
	}
	for _, p := range strings.Fields(string(out)) {
		for _, h := range heavy {
			if p == h || strings.HasPrefix(p, h+"/") && p != "github.com/logbook-dev/logbook/adapters/redact/cut" {
				t.Errorf("logbook-hook links %s", p)
			}
		}
	}
}

// TestExecBinaryDeps keeps logbook-exec, which an agent starts for
// every command, as small as logbook-hook: serve runs exec, so the
// binary links none of what TestHookBinaryDeps keeps out of the hook,
// nor the rules and reducers exec checks a request with.
func TestExecBinaryDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/logbook-dev/logbook/cmd/logbook-exec").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	heavy := []string{"github.com/nats-io", "github.com/cockroachdb/pebble", "github.com/prometheus",
		"google.golang.org/protobuf", "github.com/spf13/cobra", "github.com/logbook-dev/logbook/adapters/natslog",
		"github.com/logbook-dev/logbook/adapters/api", "github.com/logbook-dev/logbook/adapters/worker",
		"github.com/logbook-dev/logbook/adapters/redact", "github.com/logbook-dev/logbook/reducers",
		"github.com/logbook-dev/logbook/projections", "github.com/logbook-dev/logbook/sandbox",
		"net", "os/user", "runtime/cgo", "crypto", "math/big",
	}
	for _, p := range strings.Fields(string(out)) {
		for _, h := range heavy {
			if p == h || strings.HasPrefix(p, h+"/") {
				t.Errorf("logbook-exec links %s", p)
			}
		}
	}
}

// TestReporterBinaryDeps keeps logbook-reporter, which every restricted
// command runs under, a millisecond's start: it links its own package
// and the standard library's smallest parts only (no fmt, no reflect,
// no cgo), nothing with package inits to pay for.
func TestReporterBinaryDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", "github.com/logbook-dev/logbook/cmd/logbook-reporter").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	own := []string{"github.com/logbook-dev/logbook/cmd/logbook-reporter", "github.com/logbook-dev/logbook/sandbox/reporter"}
	heavy := []string{"fmt", "reflect", "net", "os/user", "os/exec", "runtime/cgo", "crypto", "math/big", "encoding", "log", "regexp", "text", "unicode/utf16"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		p, std, _ := strings.Cut(line, " ")
		if std != "true" && !slices.Contains(own, p) {
			t.Errorf("logbook-reporter links %s, outside the standard library", p)
		}
		for _, h := range heavy {
			if p == h || strings.HasPrefix(p, h+"/") {
				t.Errorf("logbook-reporter links %s", p)
			}
		}
	}
}

// TestHookSockDeps keeps adapters/hooksock, the hook's transport, free of
// the network stack and of cgo, so that a binary linking it stays static.
func TestHookSockDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/logbook-dev/logbook/adapters/hooksock").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "net" || strings.HasPrefix(p, "net/") || p == "os/user" || p == "runtime/cgo" {
			t.Errorf("adapters/hooksock links %s", p)
		}
	}
}

// TestLogbookStartDeps keeps out of logbook packages whose initializers
// every logbook process (each command, hook and exec) ran at its start
// for what it did not need: golang/protobuf, which an old prometheus
// client_model linked, with protobuf's descriptor packages (their
// initializers build every descriptor of descriptor.proto).
func TestLogbookStartDeps(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/logbook-dev/logbook/cmd/logbook").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	heavy := []string{"github.com/golang/protobuf",
		"google.golang.org/protobuf/reflect/protodesc", "google.golang.org/protobuf/types/descriptorpb"}
	for _, p := range strings.Fields(string(out)) {
		for _, h := range heavy {
			if p == h || strings.HasPrefix(p, h+"/") {
				t.Errorf("logbook links %s", p)
			}
		}
	}
}
