package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// fakeAgent is a stand-in for an agent's process in script tests: a
// program that is not a shell, runs `sh -c SCRIPT` as its child (so hooks
// in SCRIPT find it as their agent process), writes the file named by
// $FAKEAGENT_DONE when SCRIPT has finished, and then lives until it gets
// SIGINT or SIGTERM.
func fakeAgent() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fakeagent SCRIPT")
		os.Exit(2)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	cmd := exec.Command("sh", "-c", os.Args[1])
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "fakeagent: %v\n", err)
		os.Exit(1)
	}
	if done := os.Getenv("FAKEAGENT_DONE"); done != "" {
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "fakeagent: %v\n", err)
			os.Exit(1)
		}
	}
	<-sig
	os.Exit(0)
}

// dispatch is `dispatch PROGRAM ARGS...`: a program that is not a shell
// and stands between an agent and its hook, as a harness's dispatcher
// script does. It runs PROGRAM with its own standard streams and exits
// with its exit code.
func dispatch() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: dispatch PROGRAM ARGS...")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintf(os.Stderr, "dispatch: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// waitOut REGEX ARGS... runs `logbook ARGS...` (in this process, on the
// script's data dir) until its output matches REGEX, for at most 20 s.
// With !, it waits until the output does not match. The last run's
// output and error output become the script's stdout and stderr, as
// after exec, so the checks that follow test what was waited for.
func waitOut(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: waitout REGEX ARGS...")
	}
	re, err := regexp.Compile(args[0])
	ts.Check(err)
	var out, errOut bytes.Buffer
	deadline := time.Now().Add(20 * time.Second)
	for {
		out.Reset()
		errOut.Reset()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := runCLI(ctx, append([]string{"--data", ts.Getenv("LOGBOOK_DATA")}, args[1:]...), nil, &out, &errOut)
		cancel()
		if err == nil && re.Match(out.Bytes()) != neg {
			// Both are set, empty ones too: a check after waitout never
			// sees an earlier command's output.
			ts.Stdout().Write(out.Bytes())
			ts.Stderr().Write(errOut.Bytes())
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("logbook %v: waited 20s for output matching %q (negated: %v); last output:\n%s%s(err %v)", args[1:], args[0], neg, out.Bytes(), errOut.Bytes(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitFile NAME waits (at most 20 s) until file NAME exists.
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitfile NAME")
	}
	for range 400 {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear", args[0])
}
