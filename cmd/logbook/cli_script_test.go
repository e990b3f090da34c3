package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/testscript"
)

// cliScriptCmds adds to cmds the script commands of the command-line
// conventions' scripts:
//
//	exits CODE PROG [ARG...]  runs PROG and checks its exit code
//	jsonshape                 replaces stdout (JSON, or JSON lines) by its shape: one
//	                          line per key path and type, sorted; it fails
//	                          on a key that is not lower snake case
//	pathonly                  leaves on PATH only the script's programs
//	envout NAME REGEXP        sets NAME to REGEXP's first group in stdout
//	freeport NAME             sets NAME to a loopback host:port free now
//	httpget URL               GETs URL (retrying for 10 s until it answers
//	                          200) and prints the body on stdout
//	jsonsame FILE1 FILE2      checks that two files hold the same JSON value,
//	                          whatever their layout
func cliScriptCmds(cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	cmds["exits"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: exits CODE PROG [ARG...]")
		}
		want, err := strconv.Atoi(args[0])
		ts.Check(err)
		err = ts.Exec(args[1], args[2:]...)
		got := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			got = ee.ExitCode()
		} else if err != nil {
			ts.Fatalf("%s: %v", args[1], err)
		}
		if (got == want) == neg {
			ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
		}
	}
	cmds["freeport"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: freeport NAME")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		ts.Setenv(args[0], l.Addr().String())
		l.Close()
	}
	// httpget URL [REGEX] prints the body of a 200 answer to GET URL,
	// asking again for up to 10 s until there is one and, with REGEX,
	// until the body matches it (multi-line): what a server shows once
	// it has caught up, such as a metric counted from the log.
	cmds["httpget"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 1 || len(args) > 2 || neg {
			ts.Fatalf("usage: httpget URL [REGEX]")
		}
		var want *regexp.Regexp
		if len(args) == 2 {
			want = regexp.MustCompile("(?m)" + args[1])
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := http.Get(args[0])
			if err == nil {
				b, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode != http.StatusOK || rerr != nil:
					err = fmt.Errorf("%s %v", resp.Status, rerr)
				case want != nil && !want.Match(b):
					err = fmt.Errorf("no match for %q in the body:\n%s", args[1], b)
				default:
					fmt.Fprintf(ts.Stdout(), "%s", b)
					return
				}
			}
			if time.Now().After(deadline) {
				ts.Fatalf("GET %s: %v", args[0], err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	cmds["jsonsame"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: jsonsame FILE1 FILE2")
		}
		var v [2]any
		for i, f := range args {
			if err := json.Unmarshal([]byte(ts.ReadFile(f)), &v[i]); err != nil {
				ts.Fatalf("%s: %v", f, err)
			}
		}
		if d := cmp.Diff(v[0], v[1]); (d == "") == neg {
			ts.Fatalf("%s and %s: same %v (-%s +%s):\n%s", args[0], args[1], d == "", args[0], args[1], d)
		}
	}
	cmds["envout"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 || neg {
			ts.Fatalf("usage: envout NAME REGEXP")
		}
		m := regexp.MustCompile(args[1]).FindStringSubmatch(ts.ReadFile("stdout"))
		if len(m) < 2 {
			ts.Fatalf("no match for %q in stdout", args[1])
		}
		ts.Setenv(args[0], m[1])
	}
	cmds["jsonshape"] = func(ts *testscript.TestScript, neg bool, args []string) {
		// One JSON value, or JSON lines (read as a list of them).
		dec := json.NewDecoder(strings.NewReader(ts.ReadFile("stdout")))
		var vs []any
		for dec.More() {
			var v any
			if err := dec.Decode(&v); err != nil {
				ts.Fatalf("stdout is not JSON: %v", err)
			}
			vs = append(vs, v)
		}
		var v any = vs
		if len(vs) == 1 {
			v = vs[0]
		}
		lines := map[string]bool{}
		var bad []string
		jsonShape(v, ".", lines, &bad)
		if len(bad) > 0 {
			ts.Fatalf("keys not in lower snake case: %s", strings.Join(bad, ", "))
		}
		out := ts.Stdout()
		for _, l := range slices.Sorted(func(yield func(string) bool) {
			for l := range lines {
				if !yield(l) {
					return
				}
			}
		}) {
			fmt.Fprintln(out, l)
		}
	}
	// pathonly leaves on PATH only the directory of the script's own
	// programs (logbook, fakeagent): no bwrap, no logbook-hook.
	cmds["pathonly"] = func(ts *testscript.TestScript, neg bool, args []string) {
		first, _, _ := strings.Cut(ts.Getenv("PATH"), string(os.PathListSeparator))
		ts.Setenv("PATH", first)
	}
	return cmds
}

var (
	snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	camelKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
)

// jsonShape adds to lines the shape of v at path: "path type" for each
// leaf, with "[]" for an array's elements and "*" for the keys of an
// object whose keys are data (file names, ids) rather than names. A key
// that is a name but not lower snake case is added to bad.
func jsonShape(v any, path string, lines map[string]bool, bad *[]string) {
	join := func(k string) string {
		if path == "." {
			return "." + k
		}
		return path + "." + k
	}
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			lines[path+" {}"] = true
		}
		for k, e := range v {
			switch {
			case snakeKey.MatchString(k):
				jsonShape(e, join(k), lines, bad)
			case camelKey.MatchString(k):
				*bad = append(*bad, join(k))
			default:
				jsonShape(e, join("*"), lines, bad)
			}
		}
	case []any:
		if len(v) == 0 {
			lines[path+" []"] = true
		}
		for _, e := range v {
			jsonShape(e, strings.TrimSuffix(path, ".")+"[]", lines, bad)
		}
	case string:
		lines[path+" string"] = true
	case float64:
		lines[path+" number"] = true
	case bool:
		lines[path+" bool"] = true
	case nil:
		lines[path+" null"] = true
	}
}
