package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"mvdan.cc/sh/v3/shell"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/jsonfault"
)

// claudeHookEvents are the hook events `hooks install` wires: every one
// the Claude Code adapter understands.
var claudeHookEvents = claude.HookEvents()

// hooksFlags are the flags of `logbook hooks`.
type hooksFlags struct {
	user    bool
	project string
	gate    bool
	budget  time.Duration // --budget: the gated hook's budget
	dryRun  bool
}

func hooksCmd(g *globals) *cobra.Command {
	var f hooksFlags
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Wire Logbook into Claude Code's settings.json, unwire it, or show where it is wired",
		Long: `hooks manages Logbook's entries in Claude Code's settings.json: the user's
(~/.claude/settings.json, the default, or --user) or a project's
(--project DIR: DIR/.claude/settings.json). Every other key of the file, and
every hook that is not Logbook's, is kept as it is.`,
	}
	install := &cobra.Command{
		Use:   "install [--user | --project DIR] [--gate [--budget D]] [--dry-run]",
		Short: "Add Logbook's hook to every event Logbook reads (idempotent; backs up the old file; shows the diff)",
		Long: `install wires ` + "`logbook-hook claude`" + ` (or ` + "`logbook hook claude`" + ` when the small
binary is not found) to every Claude Code hook event Logbook reads:
` + strings.Join(claudeHookEvents, ", ") + `.
Tool events match every tool ("*"). Logbook's earlier entries are replaced,
so running it again changes nothing. The old file is kept beside the new
one as settings.json.<time>.bak, and the change is printed as a diff;
--dry-run prints the diff and writes nothing. --gate wires PreToolUse and
PermissionRequest to ` + "`logbook hook claude --gate --budget D`" + ` instead, so the
hook answers them with the gate's decision, with a "timeout" of D plus
` + fmt.Sprint(int(gateTimeoutMargin.Seconds())) + ` seconds: Claude Code must never kill a hook that waits for a
verdict (a hook it kills lets the tool run). The other events keep the
recorder. A --data given to logbook is passed on to the hook.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("budget") && !f.gate {
				return usageErrorf("--budget is for --gate: the gated hook's budget")
			}
			// What hook claude --gate takes, but 0: the server's
			// --review-budget is not known here, so no timeout longer
			// than it could be written.
			if f.budget < time.Millisecond || f.budget > maxGateBudget {
				return usageErrorf("--budget %v: want from 1ms to %v, as hook claude --gate takes", f.budget, maxGateBudget)
			}
			if err := hooksEdit(g, f, true); err != nil {
				return err
			}
			if f.gate && f.budget > gate.DefaultBudget {
				// The server's own budget bounds every review: say so
				// rather than let a longer one be cut unseen.
				b := budgetFlag(f.budget)
				fmt.Fprintf(g.stderr, "note: a review waits at most serve's --review-budget (default %s), whatever the hook's --budget: start serve with --review-budget %s for reviews to wait %s\n", budgetFlag(gate.DefaultBudget), b, b)
			}
			return nil
		},
	}
	uninstall := &cobra.Command{
		Use:   "uninstall [--user | --project DIR] [--dry-run]",
		Short: "Remove Logbook's hooks from settings.json, keeping everything else",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return hooksEdit(g, f, false)
		},
	}
	status := &cobra.Command{
		Use:   "status [--project DIR]",
		Short: "Show which hook events are wired to Logbook, in the user's and the project's settings",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return hooksStatus(g, f)
		},
	}
	for _, c := range []*cobra.Command{install, uninstall, status} {
		c.Flags().StringVar(&f.project, "project", "", "the project in DIR: DIR/.claude/settings.json (status: default the current directory)")
		if c != status {
			c.Flags().BoolVar(&f.user, "user", false, "the user's ~/.claude/settings.json (the default)")
			c.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the change, write nothing")
			c.MarkFlagsMutuallyExclusive("user", "project")
		}
	}
	install.Flags().BoolVar(&f.gate, "gate", false, "wire PreToolUse and PermissionRequest to the gate (hook claude --gate), with a timeout longer than its budget")
	install.Flags().DurationVar(&f.budget, "budget", gate.DefaultBudget, "with --gate: the most the gated hook waits for a verdict; its timeout in settings.json is this plus "+fmt.Sprint(int(gateTimeoutMargin.Seconds()))+"s")
	cmd.AddCommand(install, uninstall, status)
	return cmd
}

// userSettingsPath returns ~/.claude/settings.json.
func userSettingsPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("home directory: %w (use --project DIR)", err)
	}
	return filepath.Join(home, ".claude", "settings.json"), nil
}

// settingsPath returns the settings.json f names.
func (f hooksFlags) settingsPath() (string, error) {
	if f.project != "" {
		abs, err := filepath.Abs(f.project)
		if err != nil {
			return "", err
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return "", usageErrorf("--project %s: not a directory", f.project)
		}
		return filepath.Join(abs, ".claude", "settings.json"), nil
	}
	return userSettingsPath()
}

// gateTimeoutMargin is how much longer than the gated hook's budget
// Claude Code lets it run (the hook's "timeout" in settings.json): the
// hook itself waits its budget plus hookGateMargin for the server, and
// needs a moment to start and answer.
const gateTimeoutMargin = 30 * time.Second

// hookWires are the hook commands `hooks install` writes: recorder for
// every event; with gate set, gate (with its timeout, in seconds) for
// the events the gate answers, PreToolUse and PermissionRequest.
type hookWires struct {
	recorder string
	gate     string
	timeout  int
}

// gated reports whether event ev is wired to the gate.
func (w hookWires) gated(ev string) bool {
	return w.gate != "" && (ev == gate.EventPreToolUse || ev == gate.EventPermissionRequest)
}

// installWires returns the hook commands `hooks install` writes for f.
func installWires(g *globals, f hooksFlags) hookWires {
	w := hookWires{recorder: hookCommand(g)}
	if f.gate {
		w.gate = gateHookCommand(g, f.budget)
		w.timeout = int(math.Ceil((f.budget + gateTimeoutMargin).Seconds()))
	}
	return w
}

// gateHookCommand returns the command line of the gated hook: this
// binary's `hook claude --gate --budget B`, by name when PATH finds
// logbook, else by its absolute path. It is logbook itself, not
// logbook-hook, which would only hand the call over to it.
func gateHookCommand(g *globals, budget time.Duration) string {
	cmd := "logbook"
	if self, _ := os.Executable(); !lookPathIs("logbook") && self != "" {
		cmd = shellQuote(self)
	}
	cmd += " hook" + dataArg(g) + " claude --gate --budget " + budgetFlag(budget)
	return cmd
}

// budgetFlag returns budget as a --budget value: whole seconds as "90s"
// (not 1m30s), anything finer as time.Duration prints it (1.5s, 250ms).
func budgetFlag(budget time.Duration) string {
	if budget%time.Second == 0 {
		return fmt.Sprintf("%ds", int(budget.Seconds()))
	}
	return budget.String()
}

// dataArg returns " --data DIR" for the --data given to logbook, as an
// absolute path, or "".
func dataArg(g *globals) string {
	if g.data != "" {
		if abs, err := filepath.Abs(g.data); err == nil {
			return " --data " + shellQuote(abs)
		}
	}
	return ""
}

// hookCommand returns the command line the recording hooks run:
// logbook-hook when it is on PATH or beside this binary, else this
// binary's `hook claude`, by name when PATH finds it, else by its
// absolute path.
func hookCommand(g *globals) string {
	var cmd string
	self, _ := os.Executable()
	switch {
	case lookPathIs("logbook-hook"):
		cmd = "logbook-hook claude"
	case self != "" && isExecutable(filepath.Join(filepath.Dir(self), "logbook-hook")):
		cmd = shellQuote(filepath.Join(filepath.Dir(self), "logbook-hook")) + " claude"
	case lookPathIs("logbook"):
		cmd = "logbook hook claude"
	case self != "":
		cmd = shellQuote(self) + " hook claude"
	default:
		cmd = "logbook hook claude"
	}
	if d := dataArg(g); d != "" {
		cmd = strings.Replace(cmd, " claude", d+" claude", 1)
	}
	return cmd
}

func lookPathIs(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isLogbookHook reports whether a hook command is Logbook's, by what it
// runs (its words as sh splits them): a program named logbook-hook, or
// logbook run as `hook …`, or this very binary or the logbook-hook
// beside it under any name (a build installed as logbook-dev, say), run
// as the commands hookCommand and gateHookCommand write.
func isLogbookHook(command string) bool {
	fields, err := shell.Fields(command, func(string) string { return "" })
	if err != nil || len(fields) == 0 {
		return false
	}
	prog := fields[0]
	switch filepath.Base(prog) {
	case "logbook-hook":
		return true
	case "logbook":
		return slices.Contains(fields[1:], "hook")
	}
	if !filepath.IsAbs(prog) {
		return false
	}
	self, err := os.Executable()
	if err != nil {
		return false
	}
	same := func(a, b string) bool {
		sa, errA := os.Stat(a)
		sb, errB := os.Stat(b)
		return errA == nil && errB == nil && os.SameFile(sa, sb)
	}
	switch {
	case same(prog, self):
		return slices.Contains(fields[1:], "hook")
	case same(prog, filepath.Join(filepath.Dir(self), "logbook-hook")):
		return true
	}
	return false
}

// hooksEdit installs (install true) or removes Logbook's hooks in the
// settings file f names, printing the diff; nothing is written when
// nothing changes or with --dry-run.
func hooksEdit(g *globals, f hooksFlags, install bool) error {
	path, err := f.settingsPath()
	if err != nil {
		return err
	}
	target, err := settingsTarget(path)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	existed := err == nil
	var wires hookWires
	if install {
		wires = installWires(g, f)
	}
	updated, err := editSettings(old, wires)
	if err != nil {
		return fmt.Errorf("%s: %w; fix it or move it aside, then run this again", path, err)
	}
	if bytes.Equal(old, updated) || (!existed && !install) {
		fmt.Fprintf(g.stdout, "%s: unchanged\n", path)
		return nil
	}
	fmt.Fprintf(g.stdout, "--- %s\n+++ %s\n", path, path)
	writeLineDiff(g.stdout, string(old), string(updated))
	if f.dryRun {
		fmt.Fprintln(g.stdout, "(dry run: nothing written)")
		return nil
	}
	mode := fs.FileMode(0o644)
	if existed {
		st, err := os.Stat(target)
		if err != nil {
			return err
		}
		mode = st.Mode().Perm()
		backup, err := writeBackup(path, old, mode)
		if err != nil {
			return fmt.Errorf("back up %s: %w", path, err)
		}
		fmt.Fprintf(g.stdout, "backed up the old file to %s\n", backup)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	// Through a symlink the target is rewritten in its own directory,
	// so the link (into a dotfiles repository, say) stays a link.
	if err := writeFileAtomic(target, updated, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if target != path {
		fmt.Fprintf(g.stdout, "wrote %s (%s links to it)\n", target, path)
	}
	if install {
		if wires.gate == "" {
			fmt.Fprintf(g.stdout, "wired %s to %s\n", plural(len(claudeHookEvents), "hook event"), wires.recorder)
		} else {
			fmt.Fprintf(g.stdout, "wired %s to %s, and %s and %s to %s with a timeout of %d s\n",
				plural(len(claudeHookEvents)-2, "hook event"), wires.recorder, gate.EventPreToolUse, gate.EventPermissionRequest, wires.gate, wires.timeout)
		}
	} else {
		fmt.Fprintln(g.stdout, "removed Logbook's hooks")
	}
	return nil
}

// maxSettingsLinks is how many symlinks settingsTarget follows before
// it calls the chain a loop (Linux's own limit is 40).
const maxSettingsLinks = 40

// settingsTarget returns the file a settings file path names: path
// itself when it is not a symlink (or does not exist yet), else the
// file at the end of its chain of symlinks (each relative one taken
// from the directory of the link that holds it). Rewriting the target
// in its own directory keeps path a link. A dangling symlink, a loop
// or a chain longer than maxSettingsLinks, and a target that is not a
// regular file are errors naming path.
func settingsTarget(path string) (string, error) {
	p := path
	for hops := 0; ; hops++ {
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) && p == path {
			return path, nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: a dangling symlink: its target %s does not exist; fix or remove the link, then run this again", path, p)
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			if !st.Mode().IsRegular() {
				return "", fmt.Errorf("%s: %s is not a regular file", path, p)
			}
			if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil && p != path {
				p = filepath.Join(dir, filepath.Base(p))
			}
			return p, nil
		}
		if hops >= maxSettingsLinks {
			return "", fmt.Errorf("%s: a symlink loop (more than %d links followed)", path, maxSettingsLinks)
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if !filepath.IsAbs(dest) {
			// Not filepath.Join: a ".." after a symlinked directory is
			// the kernel's to resolve, not a lexical clean's.
			dest = filepath.Dir(p) + string(filepath.Separator) + dest
		}
		p = dest
	}
}

// hookEntry is one hook of a group in settings.json.
type hookEntry struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"` // seconds
}

// writeBackup writes old beside path as path.<UTC time>.bak (…-2.bak and
// on when that exists: a backup is never overwritten) and returns its
// name.
func writeBackup(path string, old []byte, mode fs.FileMode) (string, error) {
	base := fmt.Sprintf("%s.%s", path, time.Now().UTC().Format("20060102T150405Z"))
	for n := 1; ; n++ {
		name := base + ".bak"
		if n > 1 {
			name = fmt.Sprintf("%s-%d.bak", base, n)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(old)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return name, err
	}
}

// editSettings returns settings.json text old with every Logbook hook
// removed and, when wires.recorder is set, one group per event of
// claudeHookEvents added, running wires.gate (with its timeout) for the
// events the gate answers when that is set, else wires.recorder. Keys
// keep their order; an event left with no group and a "hooks" left
// empty are removed.
func editSettings(old []byte, wires hookWires) ([]byte, error) {
	top, hooks, err := parseSettings(old)
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(hooks); i++ {
		ev := hooks[i].key
		groups, err := hookGroups(ev, hooks[i].val)
		if err != nil {
			return nil, err
		}
		kept, changed, err := withoutLogbook(ev, groups)
		if err != nil {
			return nil, err
		}
		if !changed {
			continue
		}
		if len(kept) == 0 {
			hooks = slices.Delete(hooks, i, i+1)
			i--
			continue
		}
		hooks[i].val = rawList(kept)
	}
	if wires.recorder != "" {
		for _, ev := range claudeHookEvents {
			entry := hookEntry{Type: "command", Command: wires.recorder}
			if wires.gated(ev) {
				entry = hookEntry{Type: "command", Command: wires.gate, Timeout: wires.timeout}
			}
			group := struct {
				Matcher string `json:"matcher,omitempty"`
				Hooks   []any  `json:"hooks"`
			}{Hooks: []any{entry}}
			if claude.ToolHookEvent(ev) {
				group.Matcher = "*"
			}
			var groups []json.RawMessage
			if raw, ok := hooks.get(ev); ok {
				if groups, err = hookGroups(ev, raw); err != nil {
					return nil, err
				}
			}
			b, err := marshalPlain(group)
			if err != nil {
				return nil, err
			}
			hooks.set(ev, rawList(append(groups, b)))
		}
	}
	if len(hooks) == 0 {
		top.remove("hooks")
	} else {
		raw, _ := hooks.MarshalJSON()
		top.set("hooks", raw)
	}
	if len(top) == 0 && len(bytes.TrimSpace(old)) == 0 {
		return old, nil
	}
	flat, _ := top.MarshalJSON()
	var out bytes.Buffer
	if err := json.Indent(&out, flat, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	// Unchanged content keeps the file as its owner wrote it.
	if len(old) > 0 && jsonEqual(old, out.Bytes()) {
		return old, nil
	}
	return out.Bytes(), nil
}

// jsonKind names the JSON type of the value raw begins with, as a
// sentence names it: "an object", "a list", "a string", "a number", "true
// or false", "null"; "" for what is not JSON.
func jsonKind(raw []byte) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return ""
	}
	switch c := t[0]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "a list"
	case c == '"':
		return "a string"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	case c == 't' || c == 'f':
		return "true or false"
	case c == 'n':
		return "null"
	}
	return ""
}

// parseSettings reads settings.json text b as Claude Code's settings
// (an object whose "hooks" member, when present, is an object of hook
// events) and returns the top object and its "hooks". Empty text is an
// empty object. The error says what is where and what was expected, in
// JSON's terms (the file's name is the caller's to add).
func parseSettings(b []byte) (top, hooks object, err error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil, nil
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
			return nil, nil, fmt.Errorf("not valid JSON: %v (line %d)", se, line)
		}
		return nil, nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if k := jsonKind(b); k != "an object" {
		return nil, nil, fmt.Errorf(`the file holds %s; want an object such as {"hooks": {...}}`, k)
	}
	if k, dup := jsonfault.DuplicateKey(b, false); dup {
		// Written back, the file would keep only the last of the two.
		return nil, nil, fmt.Errorf("key %q is given twice (Claude Code reads the last one); keep one and run again", k)
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, nil, fmt.Errorf("not valid JSON: %v", err)
	}
	raw, ok := top.get("hooks")
	if !ok || jsonKind(raw) == "null" {
		return top, nil, nil
	}
	if k := jsonKind(raw); k != "an object" {
		return nil, nil, fmt.Errorf(`"hooks" is %s; want an object of hook events such as {"PreToolUse": [...]}`, k)
	}
	if err := json.Unmarshal(raw, &hooks); err != nil {
		return nil, nil, fmt.Errorf(`"hooks": %v`, err)
	}
	return top, hooks, nil
}

// hookGroups returns the groups of hook event ev (raw: its value in
// "hooks"), each an object; null is none.
func hookGroups(ev string, raw json.RawMessage) ([]json.RawMessage, error) {
	if jsonKind(raw) == "null" {
		return nil, nil
	}
	if k := jsonKind(raw); k != "a list" {
		return nil, fmt.Errorf(`"hooks"."%s" is %s; want a list of hook groups such as [{"matcher": "*", "hooks": [...]}]`, ev, k)
	}
	var groups []json.RawMessage
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, fmt.Errorf(`"hooks"."%s": %v`, ev, err)
	}
	for i, g := range groups {
		if k := jsonKind(g); k != "an object" {
			return nil, fmt.Errorf(`"hooks"."%s"[%d] is %s; want a hook group such as {"matcher": "*", "hooks": [...]}`, ev, i, k)
		}
	}
	return groups, nil
}

// groupHooks returns the hooks of group i of event ev: its "hooks"
// member, a list of objects; ok false when the group has none.
func groupHooks(ev string, i int, obj object) (hs []json.RawMessage, ok bool, err error) {
	raw, ok := obj.get("hooks")
	if !ok || jsonKind(raw) == "null" {
		return nil, false, nil
	}
	if k := jsonKind(raw); k != "a list" {
		return nil, false, fmt.Errorf(`"hooks"."%s"[%d]."hooks" is %s; want a list of hooks such as [{"type": "command", "command": "..."}]`, ev, i, k)
	}
	if err := json.Unmarshal(raw, &hs); err != nil {
		return nil, false, fmt.Errorf(`"hooks"."%s"[%d]."hooks": %v`, ev, i, err)
	}
	for j, h := range hs {
		if k := jsonKind(h); k != "an object" {
			return nil, false, fmt.Errorf(`"hooks"."%s"[%d]."hooks"[%d] is %s; want a hook such as {"type": "command", "command": "..."}`, ev, i, j, k)
		}
	}
	return hs, true, nil
}

// hookCommandOf returns hook h's "command" when it is a string.
func hookCommandOf(h json.RawMessage) string {
	var c struct {
		Command json.RawMessage `json:"command"`
	}
	var cmd string
	if json.Unmarshal(h, &c) == nil && json.Unmarshal(c.Command, &cmd) == nil {
		return cmd
	}
	return ""
}

// withoutLogbook returns the groups of event ev with Logbook's hooks
// taken out of each, dropping a group left with none; changed reports
// whether any was.
func withoutLogbook(ev string, groups []json.RawMessage) (kept []json.RawMessage, changed bool, err error) {
	for i, g := range groups {
		var obj object
		if err := json.Unmarshal(g, &obj); err != nil {
			return nil, false, fmt.Errorf(`"hooks"."%s"[%d]: %v`, ev, i, err)
		}
		hs, ok, err := groupHooks(ev, i, obj)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			kept = append(kept, g)
			continue
		}
		var left []json.RawMessage
		for _, h := range hs {
			if isLogbookHook(hookCommandOf(h)) {
				changed = true
				continue
			}
			left = append(left, h)
		}
		if len(left) == len(hs) {
			kept = append(kept, g)
			continue
		}
		if len(left) == 0 {
			continue
		}
		obj.set("hooks", rawList(left))
		g, _ = obj.MarshalJSON()
		kept = append(kept, g)
	}
	return kept, changed, nil
}

// rawList joins JSON values into a JSON list, as they are (json.Marshal
// would escape their <, > and &).
func rawList(vs []json.RawMessage) json.RawMessage {
	b := []byte{'['}
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return append(b, ']')
}

// marshalPlain is json.Marshal without escaping <, > and &: a command
// line in settings.json reads as written.
func marshalPlain(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// object is a JSON object that keeps its keys in order, its values as
// they were written.
type object []member

type member struct {
	key string
	val json.RawMessage
}

func (o object) get(k string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == k {
			return m.val, true
		}
	}
	return nil, false
}

func (o *object) set(k string, v json.RawMessage) {
	for i := range *o {
		if (*o)[i].key == k {
			(*o)[i].val = v
			return
		}
	}
	*o = append(*o, member{k, v})
}

func (o *object) remove(k string) {
	*o = slices.DeleteFunc(*o, func(m member) bool { return m.key == k })
}

// UnmarshalJSON reads a JSON object, keeping its keys' order.
func (o *object) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return fmt.Errorf("want an object, got %v", t)
	}
	*o = nil
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		o.set(t.(string), v)
	}
	_, err = dec.Token()
	return err
}

// MarshalJSON writes the object's keys in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeLineDiff prints the lines of a and b that differ, as a unified
// diff without hunk headers: " " kept, "-" removed, "+" added, with at
// most two kept lines around each change.
func writeLineDiff(w io.Writer, a, b string) {
	x, y := splitLines(a), splitLines(b)
	// The longest common subsequence, by dynamic programming: settings
	// files are small.
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ops []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, line{' ', x[i]})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, line{'+', y[j]})
			j++
		default:
			ops = append(ops, line{'-', x[i]})
			i++
		}
	}
	const ctx = 2
	near := func(k int) bool {
		for d := max(0, k-ctx); d <= min(len(ops)-1, k+ctx); d++ {
			if ops[d].op != ' ' {
				return true
			}
		}
		return false
	}
	skipped := false
	for k, l := range ops {
		if l.op == ' ' && !near(k) {
			if !skipped {
				fmt.Fprintln(w, "@@")
			}
			skipped = true
			continue
		}
		skipped = false
		fmt.Fprintf(w, "%c%s\n", l.op, l.text)
	}
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// hookWiring is where one hook event is wired to Logbook.
type hookWiring struct {
	Event   string   `json:"event"`
	User    []string `json:"user"`    // Logbook's commands in the user's settings
	Project []string `json:"project"` // and in the project's (settings.json, settings.local.json)
}

// hooksStatus prints, for each hook event Logbook reads, the Logbook
// commands wired to it in the user's and the project's settings.
func hooksStatus(g *globals, f hooksFlags) error {
	user, err := userSettingsPath()
	if err != nil {
		return err
	}
	dir := f.project
	if dir == "" {
		dir = "."
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return err
	}
	projectFiles := []string{filepath.Join(dir, ".claude", "settings.json"), filepath.Join(dir, ".claude", "settings.local.json")}
	wired := func(paths ...string) (map[string][]string, error) {
		out := map[string][]string{}
		for _, p := range paths {
			m, err := logbookHooksIn(p)
			if err != nil {
				return nil, err
			}
			for ev, cmds := range m {
				out[ev] = append(out[ev], cmds...)
			}
		}
		return out, nil
	}
	u, err := wired(user)
	if err != nil {
		return err
	}
	p, err := wired(projectFiles...)
	if err != nil {
		return err
	}
	rows := make([]hookWiring, 0, len(claudeHookEvents))
	missing := 0
	for _, ev := range claudeHookEvents {
		r := hookWiring{Event: ev, User: u[ev], Project: p[ev]}
		if r.User == nil {
			r.User = []string{}
		}
		if r.Project == nil {
			r.Project = []string{}
		}
		if len(r.User)+len(r.Project) == 0 {
			missing++
		}
		rows = append(rows, r)
	}
	if g.json {
		return writeJSON(g.stdout, struct {
			UserSettings     string       `json:"user_settings"`
			ProjectSettings  []string     `json:"project_settings"`
			Events           []hookWiring `json:"events"`
			EventsNotWired   int          `json:"events_not_wired"`
			EventsUnderstood int          `json:"events_understood"`
		}{user, projectFiles, rows, missing, len(claudeHookEvents)})
	}
	fmt.Fprintf(g.stdout, "user:    %s\nproject: %s\n\n", user, strings.Join(projectFiles, ", "))
	tw := newTable(g.stdout)
	fmt.Fprintln(tw, "EVENT\tUSER\tPROJECT")
	show := func(cmds []string) string {
		if len(cmds) == 0 {
			return "-"
		}
		return strings.Join(cmds, "; ")
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cell(r.Event), cell(show(r.User)), cell(show(r.Project)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if missing > 0 {
		fmt.Fprintf(g.stdout, "\n%s of %d not wired: run `logbook hooks install`\n", plural(missing, "event"), len(claudeHookEvents))
	}
	return nil
}

// logbookHooksIn returns the Logbook hook commands in settings file path
// by event; a file that does not exist has none, a dangling symlink or
// a loop in its place is an error (settingsTarget).
func logbookHooksIn(path string) (map[string][]string, error) {
	target, err := settingsTarget(path)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(target)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	bad := func(err error) error {
		return fmt.Errorf("%s: %w; fix it, or move it aside and run `logbook hooks install`", path, err)
	}
	_, hooks, err := parseSettings(b)
	if err != nil {
		return nil, bad(err)
	}
	out := map[string][]string{}
	for _, m := range hooks {
		groups, err := hookGroups(m.key, m.val)
		if err != nil {
			return nil, bad(err)
		}
		for i, g := range groups {
			var obj object
			if err := json.Unmarshal(g, &obj); err != nil {
				return nil, bad(fmt.Errorf(`"hooks"."%s"[%d]: %v`, m.key, i, err))
			}
			hs, _, err := groupHooks(m.key, i, obj)
			if err != nil {
				return nil, bad(err)
			}
			for _, h := range hs {
				if c := hookCommandOf(h); isLogbookHook(c) {
					out[m.key] = append(out[m.key], c)
				}
			}
		}
	}
	return out, nil
}
