// Package reducers holds one pure decider per aggregate in its
// subpackages. This file enforces what "pure" means.
package reducers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbidden lists imports a reducer may not use directly: clocks, randomness,
// I/O, networking, logging, concurrency helpers and every adapter.
var forbidden = []string{
	"os", "os/exec", "net", "net/http", "math/rand", "math/rand/v2", "crypto/rand",
	"log", "log/slog", "io/ioutil", "syscall", "unsafe", "sync", "context",
	"github.com/nats-io/", "github.com/cockroachdb/", "github.com/creack/pty",
	"github.com/logbook-dev/logbook/adapters", "github.com/logbook-dev/logbook/projections",
	"github.com/logbook-dev/logbook/sandbox", "github.com/logbook-dev/logbook/replay",
	"github.com/logbook-dev/logbook/cmd",
}

// forbiddenCalls lists package-qualified calls that read the clock.
var forbiddenCalls = map[string]bool{"time.Now": true, "time.Since": true, "time.Until": true, "time.Sleep": true, "time.After": true, "time.Tick": true, "time.NewTimer": true, "time.NewTicker": true, "time.AfterFunc": true}

func TestReducersArePure(t *testing.T) {
	var files []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no reducer sources found")
	}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{} // local name → import path
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if p == bad || strings.HasSuffix(bad, "/") && strings.HasPrefix(p, bad) || strings.HasPrefix(p, bad+"/") {
					t.Errorf("%s imports %q: reducers must stay pure", f, p)
				}
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = p
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok || names[id.Name] != "time" {
				return true
			}
			if forbiddenCalls["time."+sel.Sel.Name] {
				t.Errorf("%s: %s uses time.%s: reducers read time only from envelopes and commands", f, fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
		if strings.Contains(file.Name.Name, "init") {
			continue
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "init" && fn.Recv == nil {
				t.Errorf("%s: reducers may not have init functions", f)
			}
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
				t.Errorf("%s: %s: reducers may not have package-level variables", f, fset.Position(g.Pos()))
			}
		}
	}
}
