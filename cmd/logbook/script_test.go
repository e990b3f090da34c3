package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/setup"
	"github.com/logbook-dev/logbook/cmd/internal/execfast"
	"github.com/logbook-dev/logbook/cmd/internal/hookfast"
)

func TestMain(m *testing.M) {
	isolate()
	testscript.Main(removingSoakBin{m}, map[string]func(){
		// A script's logbook dies with its parent (the test process, or
		// a shell of the script) however that ends: a -timeout panic
		// kills no background serve of a script.
		"logbook":      func() { _ = sandboxtest.DieWithParent(); main() },
		"logbook-hook": func() { _ = sandboxtest.DieWithParent(); os.Exit(hookfast.Main(os.Args[1:], os.Stdin, os.Stderr, "")) },
		"logbook-exec": func() { _ = sandboxtest.DieWithParent(); os.Exit(execfast.Main(os.Args[1:], os.Stdout, os.Stderr, "")) },
		"fakeagent":    fakeAgent,
		"hooksockcall": hookSockCall,
		"dispatch":     dispatch,
		"sigdefault":   sigDefault,
	})
}

// isolate keeps the serves the tests start off this machine's own
// agents and ports: no board on the default port ($LOGBOOK_HTTP off), and
// no agent folders of the person running the tests followed (each
// agent's folder variable names a path that cannot exist). It sets them
// once, in the test binary, and marks the environment so that the
// processes it starts keep what a test gave them.
func isolate() {
	const mark = "LOGBOOK_TEST_ENV"
	if os.Getenv(mark) != "" {
		return
	}
	os.Setenv(mark, "1")
	os.Setenv("LOGBOOK_HTTP", "off")
	for _, a := range agents() {
		if a.DirEnv != "" {
			os.Setenv(a.DirEnv, filepath.Join(os.DevNull, a.Verb))
		}
	}
}

// hookSockCall is `hooksockcall DIR`: it sends its standard input to the
// hook socket of data dir DIR (hooksock.Call) and prints the answer.
func hookSockCall() {
	req, err := io.ReadAll(os.Stdin)
	if err == nil {
		var b []byte
		if b, err = hooksock.Call(os.Args[1], req, time.Now().Add(10*time.Second)); err == nil {
			os.Stdout.Write(b)
			return
		}
	}
	fmt.Fprintf(os.Stderr, "hooksockcall: %v\n", err)
	os.Exit(1)
}

// sigDefault is `sigdefault PROG [ARG...]`: it becomes PROG (looked up
// on PATH; exec, same process id) with SIGHUP at its default action,
// whatever this process was handed. A script that stops a command with
// SIGHUP runs it so: a test run started under nohup (or by any runner
// that ignores SIGHUP) hands every process it starts SIGHUP ignored,
// which logbook then keeps ignored on purpose (main), and a shell cannot
// undo it (POSIX sh: a signal ignored on entry to a non-interactive
// shell cannot be trapped or reset).
func sigDefault() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sigdefault PROG [ARG...]")
		os.Exit(2)
	}
	// Notify installs a handler even for a signal ignored at start, and
	// an exec sets every handled signal to its default action.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	path, err := exec.LookPath(os.Args[1])
	if err == nil {
		err = syscall.Exec(path, os.Args[1:], os.Environ())
	}
	fmt.Fprintf(os.Stderr, "sigdefault: %v\n", err)
	os.Exit(1)
}

// removingSoakBin runs the tests, then removes the binary the soaks
// built (testscript.Main exits once they are run).
type removingSoakBin struct{ m *testing.M }

// Run runs the tests with -test.parallel at four times GOMAXPROCS (twice
// under -race; sandboxtest.SetParallel) unless the command line sets it:
// this package's parallel tests (each script, the serves, imports and
// soaks) mostly wait on their processes, fsyncs and timers, so GOMAXPROCS
// of them at a time leaves the CPUs idle.
func (r removingSoakBin) Run() int {
	sandboxtest.SetParallel(4)
	defer func() {
		if soakBin.dir != "" {
			os.RemoveAll(soakBin.dir)
		}
	}()
	return r.m.Run()
}

// TestScripts runs the command-line scenarios in testdata/script: each is
// a real logbook process (serve, import, hook, queries) against a data
// dir of its own.
func TestScripts(t *testing.T) {
	// Beside the package's other parallel tests: the scripts and the
	// slow tests share the -test.parallel slots from the start.
	t.Parallel()
	root, _ := filepath.Abs("../..")
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		// LOGBOOK_UPDATE_SCRIPTS=1 rewrites the golden files a script
		// compares with cmp (JSON shapes, say) from what it got.
		UpdateScripts: os.Getenv("LOGBOOK_UPDATE_SCRIPTS") != "",
		Setup: func(env *testscript.Env) error {
			env.Setenv("LOGBOOK_DATA", filepath.Join(env.WorkDir, "data"))
			// HOME is testscript's /no-home: no agent folders to follow.
			env.Setenv("LOGBOOK_TEST_ENV", "1")
			env.Setenv("LOGBOOK_HTTP", "off")
			env.Setenv("FIXTURES", filepath.Join(root, "testdata"))
			env.Setenv("CORPUS", filepath.Join(root, "..", "shared", "corpus"))
			// RUN is digits of this script's own work dir: a script that
			// looks for its processes machine-wide by their command line
			// (noprocess) puts it there, so that another run of the
			// script on the same machine is not found, nor killed.
			env.Setenv("RUN", runDigits(env.WorkDir))
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			if cond == "usermanager" {
				// A systemd user manager answers: setup would enable a
				// real service, so the scripts leave that step out.
				ok, _ := setup.UserManager(context.Background())
				return ok, nil
			}
			if cond == "corpus" {
				_, err := os.Stat(filepath.Join(root, "..", "shared", "corpus"))
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: cliScriptCmds(map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// waitserve waits until the data dir's server answers.
			"waitserve": func(ts *testscript.TestScript, neg bool, args []string) {
				dd := dataDir(ts.Getenv("LOGBOOK_DATA"))
				if !serverUp(dd) {
					ts.Fatalf("server did not come up in %s", dd)
				}
			},
			// waitspool waits until the data dir's spool is empty (every
			// hook payload delivered).
			"waitspool": func(ts *testscript.TestScript, neg bool, args []string) {
				dd := dataDir(ts.Getenv("LOGBOOK_DATA"))
				for range 400 {
					if left, _ := filepath.Glob(filepath.Join(dd.path("spool"), "*.json")); len(left) == 0 {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				ts.Fatalf("hook payloads still in the spool")
			},
			// noprocess TEXT waits (up to 10 s) until no process's command
			// line contains TEXT; then it kills any left and fails.
			"noprocess": func(ts *testscript.TestScript, neg bool, args []string) {
				for range 200 {
					if len(sandboxtest.ProcessesWith(args[0])) == 0 {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				left := sandboxtest.ProcessesWith(args[0])
				for _, pid := range left {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				ts.Fatalf("processes %v still run %q", left, args[0])
			},
			// sparse FILE SIZE makes FILE a line of SIZE zero bytes and a
			// newline, the zeros a hole: a line over any limit, written at
			// no cost.
			"sparse": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 || neg {
					ts.Fatalf("usage: sparse FILE SIZE")
				}
				size, err := strconv.ParseInt(args[1], 10, 64)
				ts.Check(err)
				f, err := os.Create(ts.MkAbs(args[0]))
				ts.Check(err)
				_, err = f.WriteAt([]byte("\n"), size)
				ts.Check(errors.Join(err, f.Close()))
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
			// jsdelete CREDS deletes the LOGBOOK stream of the running
			// serve with the credentials file CREDS; with !, it checks
			// that the server refuses with a permissions violation.
			"jsdelete": func(ts *testscript.TestScript, neg bool, args []string) {
				var denied atomic.Value
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				// A refused request has no answer: the violation, once
				// it is in, ends the wait for one.
				nc, _, c := scriptConnect(ts, args[0], func(err error) { denied.Store(err); cancel() })
				defer nc.Close()
				js, _ := jetstream.New(nc)
				err := js.DeleteStream(ctx, natslog.StreamName)
				switch {
				case !neg && err != nil:
					ts.Fatalf("delete stream as %s: %v", c.Role, err)
				case neg && err == nil:
					ts.Fatalf("delete stream as %s succeeded", c.Role)
				case neg && denied.Load() == nil:
					ts.Fatalf("delete stream as %s failed (%v) without a permissions violation from the server", c.Role, err)
				case neg:
					ts.Logf("%v", denied.Load())
				}
			},
			// apitake CREDS VERB... tries, with the credentials file
			// CREDS, to take the running serve's requests for each VERB
			// (on its own prefix, on the shared one, and on every
			// server's) and to answer each with a spoofed reply (a verify
			// report of hash "5p00fed", equal). With !, it checks that
			// the server refuses every subscription with a permissions
			// violation; the connection stays open, answering whatever
			// it is given, until the script ends.
			"apitake": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 {
					ts.Fatalf("usage: apitake CREDS VERB...")
				}
				var mu sync.Mutex
				denied := map[string]bool{}
				nc, si, c := scriptConnect(ts, args[0], func(err error) {
					mu.Lock()
					denied[err.Error()] = true
					mu.Unlock()
				})
				ts.Defer(nc.Close)
				spoof := []byte(`{"data":{"seq":1,"live_hash":"5p00fed","replay_hash":"5p00fed","equal":true}}`)
				var subjects []string
				for _, verb := range args[1:] {
					subjects = append(subjects, si.API+verb, api.AnyPrefix+verb, "logbook.api.*."+verb)
				}
				for _, subject := range subjects {
					_, err := nc.Subscribe(subject, func(m *nats.Msg) { m.Respond(spoof) })
					ts.Check(err)
					_, err = nc.QueueSubscribe(subject, "logbook-api", func(m *nats.Msg) { m.Respond(spoof) })
					ts.Check(err)
				}
				ts.Check(nc.Flush())
				refused := func(subject string) bool {
					mu.Lock()
					defer mu.Unlock()
					for e := range denied {
						if strings.Contains(e, `"`+subject+`"`) && strings.Contains(strings.ToLower(e), "subscription") {
							return true
						}
					}
					return false
				}
				if neg {
					// Each refused: its violation arrives within 2 s.
					for _, subject := range subjects {
						var ok bool
						for range 200 {
							if ok = refused(subject); ok {
								break
							}
							time.Sleep(10 * time.Millisecond)
						}
						if !ok {
							ts.Fatalf("as %s: no permissions violation for a subscription to %s", c.Role, subject)
						}
					}
				} else {
					// Taken: no violation arrives for any of them in those
					// 2 s, waited once for all of them rather than once each.
					for range 200 {
						for _, subject := range subjects {
							if refused(subject) {
								ts.Fatalf("as %s: subscription to %s refused", c.Role, subject)
							}
						}
						time.Sleep(10 * time.Millisecond)
					}
				}
				mu.Lock()
				for e := range denied {
					ts.Logf("%s", e)
				}
				mu.Unlock()
			},
			// apicall VERB JSON sends JSON as it is to the running
			// serve's API verb VERB with the data dir's writer
			// credentials, as any NATS client may (no redaction, no
			// checks of the CLI's), and prints the answer.
			"apicall": func(ts *testscript.TestScript, neg bool, args []string) {
				dd := dataDir(ts.Getenv("LOGBOOK_DATA"))
				si := runningServe(ts, dd)
				c, err := dd.dir().RoleCredentials(natslog.RoleWriter)
				ts.Check(err)
				nc, err := nats.Connect(si.URL, nats.UserInfo(c.User, c.Password), natslog.InboxOption(natslog.RoleWriter))
				ts.Check(err)
				defer nc.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var out json.RawMessage
				err = api.Call(ctx, nc, si.API, args[0], json.RawMessage(args[1]), &out)
				if (err != nil) != neg {
					ts.Fatalf("%s: %v", args[0], err)
				}
				fmt.Fprintf(ts.Stdout(), "%s\n", out)
			},
			// perm PATH MODE checks a file's permission bits (octal).
			"perm": func(ts *testscript.TestScript, neg bool, args []string) {
				info, err := os.Stat(ts.MkAbs(args[0]))
				ts.Check(err)
				want, err := strconv.ParseUint(args[1], 8, 32)
				ts.Check(err)
				if got := info.Mode().Perm(); (uint64(got) == want) == neg {
					ts.Fatalf("%s has mode %o, want %s%o", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
				}
			},
			// chmod MODE PATH sets a file's permission bits (octal).
			"chmod": func(ts *testscript.TestScript, neg bool, args []string) {
				m, err := strconv.ParseUint(args[0], 8, 32)
				ts.Check(err)
				ts.Check(os.Chmod(ts.MkAbs(args[1]), os.FileMode(m)))
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
			// cutblock SIZE cuts the LOGBOOK stream's first block file
			// in the data dir to SIZE bytes, as a disk fault or a copy
			// cut short would (no server may run on the data dir).
			"cutblock": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 || neg {
					ts.Fatalf("usage: cutblock SIZE")
				}
				size, err := strconv.ParseInt(args[0], 10, 64)
				ts.Check(err)
				dd := dataDir(ts.Getenv("LOGBOOK_DATA"))
				ts.Check(os.Truncate(dd.path("jetstream", "jetstream", "$G", "streams", natslog.StreamName, "msgs", "1.blk"), size))
			},
			// logstate prints the LOGBOOK stream's state in the data dir
			// (no server may run on it): "msgs N first F last L".
			"logstate": func(ts *testscript.TestScript, neg bool, args []string) {
				dd := dataDir(ts.Getenv("LOGBOOK_DATA"))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				srv, err := natslog.StartEmbedded(ctx, natslog.EmbeddedConfig{StoreDir: dd.path("jetstream")})
				ts.Check(err)
				defer srv.Shutdown()
				js, err := jetstream.New(srv.Conn())
				ts.Check(err)
				st, err := js.Stream(ctx, natslog.StreamName)
				ts.Check(err)
				info, err := st.Info(ctx)
				ts.Check(err)
				fmt.Fprintf(ts.Stdout(), "msgs %d first %d last %d\n", info.State.Msgs, info.State.FirstSeq, info.State.LastSeq)
			},
			// clobber GLOB OFFSET N overwrites N bytes at OFFSET of each
			// file GLOB matches (at least one) with 0xA5.
			"clobber": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 3 || neg {
					ts.Fatalf("usage: clobber GLOB OFFSET N")
				}
				off, err := strconv.ParseInt(args[1], 10, 64)
				ts.Check(err)
				n, err := strconv.Atoi(args[2])
				ts.Check(err)
				files, err := filepath.Glob(ts.MkAbs(args[0]))
				ts.Check(err)
				if len(files) == 0 {
					ts.Fatalf("clobber: no file matches %s", args[0])
				}
				junk := bytes.Repeat([]byte{0xA5}, n)
				for _, f := range files {
					fh, err := os.OpenFile(f, os.O_WRONLY, 0)
					ts.Check(err)
					_, err = fh.WriteAt(junk, off)
					ts.Check(errors.Join(err, fh.Close()))
				}
			},
			"waitout":  waitOut,
			"waitfile": waitFile,
		}),
	})
}

// runningServe returns what the server running on data dir dd published
// of itself, failing the script when none runs.
func runningServe(ts *testscript.TestScript, dd dataDir) datadir.ServeInfo {
	si, ok := dd.readServeInfo()
	if !ok {
		ts.Fatalf("no serve.json")
	}
	return si
}

// scriptConnect connects to the server running on the script's data dir
// with the credentials file path (relative to the script's directory),
// and returns the connection, the server and the credentials. denied gets
// each permissions violation the server reports.
func scriptConnect(ts *testscript.TestScript, path string, denied func(error)) (*nats.Conn, datadir.ServeInfo, datadir.Creds) {
	si := runningServe(ts, dataDir(ts.Getenv("LOGBOOK_DATA")))
	c, err := datadir.ReadCreds(ts.MkAbs(path))
	ts.Check(err)
	nc, err := nats.Connect(si.URL, nats.UserInfo(c.User, c.Password), natslog.InboxOption(natslog.Role(c.Role)), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			denied(err)
		}
	}))
	ts.Check(err)
	return nc, si, c
}

// runDigits returns the last 9 digits of dir (a script's work dir, whose
// parent's name ends in digits no other run has at the same time), for
// $RUN.
func runDigits(dir string) string {
	d := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, dir)
	return d[max(len(d)-9, 0):]
}
