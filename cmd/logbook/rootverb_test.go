package main

import (
	"bytes"
	"slices"
	"testing"
)

// TestTopCommands: topCommands names each verb as its command does, and
// the whole tree is those verbs (with cobra's help and completion), so
// that a command line naming one builds the very command the whole tree
// has.
func TestTopCommands(t *testing.T) {
	g := &globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	var names []string
	for _, c := range topCommands() {
		if got := c.build(g).Name(); got != c.name {
			t.Errorf("topCommands names %q the verb whose command is %q", c.name, got)
		}
		if slices.Contains(names, c.name) {
			t.Errorf("topCommands names %q twice", c.name)
		}
		names = append(names, c.name)
	}
	var tree []string
	for _, c := range newRoot(g).Commands() {
		tree = append(tree, c.Name())
	}
	slices.Sort(names)
	if !slices.Equal(tree, names) {
		t.Errorf("the whole tree's verbs %v, topCommands %v", tree, names)
	}
}

// TestNamedVerb: the verb a command line names after the root's own
// flags, else "" (the whole tree is built): no verb, help, a mistyped
// verb, a flag the root does not know before the verb.
func TestNamedVerb(t *testing.T) {
	root := newRoot(&globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"version"}, "version"},
		{[]string{"audit", "s1", "--json"}, "audit"},
		{[]string{"--data", "/d", "sessions"}, "sessions"},
		{[]string{"--data=/d", "--json", "sessions"}, "sessions"},
		{[]string{"--json=false", "--socket", "sock", "session", "show", "x"}, "session"},
		{[]string{"--data", "version", "sessions"}, "sessions"},
		{[]string{"hook", "claude", "--gate"}, "hook"},
		{[]string{"help", "sessions"}, ""},
		{[]string{"completion", "bash"}, ""},
		{[]string{"__complete", "sess"}, ""},
		{[]string{"sesions"}, ""},
		{[]string{"-h"}, ""},
		{[]string{"--version"}, ""},
		{[]string{"--limit", "5", "sessions"}, ""},
		{[]string{"--", "sessions"}, ""},
		{[]string{"--data"}, ""},
	} {
		if got := namedVerb(root, c.args); got != c.want {
			t.Errorf("namedVerb(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestRootForOneVerb: a command line naming a verb builds that verb
// alone under the root, without cobra's completion verb; one naming none
// builds every verb.
func TestRootForOneVerb(t *testing.T) {
	g := &globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	root := newRootFor(g, []string{"--data", "/d", "version"})
	if cs := root.Commands(); len(cs) != 1 || cs[0].Name() != "version" {
		t.Errorf("root for `logbook --data /d version` has %d verbs, want version alone", len(cs))
	}
	if !root.CompletionOptions.DisableDefaultCmd {
		t.Error("root for one verb adds cobra's completion verb")
	}
	whole := newRootFor(g, []string{"--version"})
	if n := len(whole.Commands()); n != len(topCommands()) {
		t.Errorf("root for `logbook --version` has %d verbs, want all %d", n, len(topCommands()))
	}
	if whole.Version == "" {
		t.Error("root for `logbook --version` has no version")
	}
	var out bytes.Buffer
	whole.SetOut(&out)
	whole.SetArgs([]string{"--version"})
	if err := whole.Execute(); err != nil || out.String() != versionText()+"\n" {
		t.Errorf("logbook --version printed %q (%v), want %q", out.String(), err, versionText()+"\n")
	}
}
