package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"logbook": func() { main() },
	})
}

// TestScripts runs the command-line scenarios in testdata/script: each is
// a real logbook process (serve, import, hook, queries) against a data
// dir of its own.
func TestScripts(t *testing.T) {
	root, _ := filepath.Abs("../..")
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("LOGBOOK_DATA", filepath.Join(env.WorkDir, "data"))
			env.Setenv("FIXTURES", filepath.Join(root, "testdata"))
			env.Setenv("CORPUS", filepath.Join(root, "..", "shared", "corpus"))
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "corpus" {
				_, err := os.Stat(filepath.Join(root, "..", "shared", "corpus"))
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// waitserve waits until the data dir's server answers.
			"waitserve": func(ts *testscript.TestScript, neg bool, args []string) {
				dd := dataDir(ts.Getenv("LOGBOOK_DATA"))
				deadline := time.Now().Add(20 * time.Second)
				for time.Now().Before(deadline) {
					if si, ok := dd.readServeInfo(); ok && si.PID > 0 {
						g := &globals{data: string(dd)}
						ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
						b, err := openBackend(ctx, g)
						cancel()
						if err == nil {
							remote := b.remote
							b.Close()
							if remote {
								return
							}
						}
					}
					time.Sleep(50 * time.Millisecond)
				}
				ts.Fatalf("server did not come up in %s", dd)
			},
			// waitgone waits until serve.json is gone (the server stopped).
			"waitgone": func(ts *testscript.TestScript, neg bool, args []string) {
				dd := dataDir(ts.Getenv("LOGBOOK_DATA"))
				for range 400 {
					if _, err := os.Stat(dd.path("serve.json")); os.IsNotExist(err) {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				ts.Fatalf("serve.json still there")
			},
			// spooled N checks how many hook payloads wait in the spool.
			"spooled": func(ts *testscript.TestScript, neg bool, args []string) {
				want, _ := strconv.Atoi(args[0])
				dd := dataDir(ts.Getenv("LOGBOOK_DATA"))
				for range 200 {
					es, _ := filepath.Glob(dd.path("spool", "*.json"))
					if len(es) == want {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				es, _ := filepath.Glob(dd.path("spool", "*.json"))
				ts.Fatalf("spool holds %d payloads, want %d", len(es), want)
			},
		},
	})
}
