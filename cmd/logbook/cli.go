package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/logbook-dev/logbook/adapters/term"
)

// The conventions every logbook command follows, applied to the whole
// command tree by conventions once every command is added, so a command
// added later follows them without doing anything:
//
//   - exit codes: 0 ok, 1 error, 2 usage (an unknown command or flag, a
//     wrong number of arguments, a flag value out of range: usageErrorf);
//     under `logbook hook` a usage error exits 1, since an agent reads 2
//     as "block" (only a gate's explicit denial, an *exitError, exits 2);
//   - a group (a command with subcommands and nothing to run of its own)
//     refuses an unknown subcommand, naming it and the nearest ones;
//   - a command that only reads the data dir (markReads) refuses a data
//     dir with no Logbook data in it rather than create an empty one;
//   - error messages name what went wrong and where, without the
//     package prefixes of the sentinels they wrap (userMessage).

// Exit codes.
const (
	codeOK    = 0
	codeError = 1
	codeUsage = 2
	// codeWaitExpired is exec's when its --wait ended before the
	// command did, which goes on in the background: its own status is
	// not known yet. timeout(1)'s code for a time that ran out.
	codeWaitExpired = 124
)

// usageError is a command line that cannot run as written: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf returns a usage error (exit 2) with a formatted message.
func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// refuseEmptyArg refuses, as a usage error led by cmd ("import claude")
// naming the argument (what, "PATH"), an argument given empty: no file
// or folder has an empty name, and a caller that read one as the current
// folder, or passed it to the file system, would say something else than
// what went wrong (most often a variable that expanded to nothing). hint
// says what to give instead. It runs before anything is read or sent.
func refuseEmptyArg(cmd, what, hint string, args []string) error {
	for i, a := range args {
		if a == "" {
			return usageErrorf("%s: %s %d of %d is empty: %s", cmd, what, i+1, len(args), hint)
		}
	}
	return nil
}

// checkTyped refuses, as a usage error naming flag, text a person types
// for the log (a reason, a justification) that is blank (empty or only
// white space) or longer than max bytes, the most the receiving side
// keeps. It runs before anything is read or sent.
func checkTyped(flag, text string, max int) error {
	if strings.TrimSpace(text) == "" || len(text) > max {
		return usageErrorf("%s of %d bytes: want 1 to %d bytes, not blank", flag, len(text), max)
	}
	return nil
}

// annReads is the annotation markReads sets.
const annReads = "logbook.reads"

// markReads marks cmd as a command that only reads the data dir: run on
// a data dir without Logbook data, it fails saying so instead of
// creating an empty store. It returns cmd.
func markReads(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annReads] = "true"
	return cmd
}

// readsOnly reports whether cmd was marked with markReads.
func readsOnly(cmd *cobra.Command) bool { return cmd.Annotations[annReads] == "true" }

// readCommands are the commands of this file's time that only read the
// data dir, by path; a command added later calls markReads itself.
var readCommands = map[string]bool{
	"logbook sessions": true, "logbook session show": true, "logbook audit": true,
	"logbook replay": true, "logbook events tail": true, "logbook commands": true,
	"logbook command output": true, "logbook usage": true, "logbook review list": true,
	"logbook task list": true, "logbook task show": true, "logbook project list": true,
	"logbook workspace list": true, "logbook workspace show": true,
}

// projectionCommands are the read commands that need nothing but the
// projection, asked through the running server's API: while that
// server's log does not answer (a cluster that lost its quorum) they
// answer from its projection as it stands, with a line saying so
// (staleNote), instead of waiting for a log that cannot say where it
// ends. Commands that read the log itself (audit, events, replay,
// workspace show's changes), and every command that decides or appends,
// are not among them and wait or fail as the log does.
var projectionCommands = map[string]bool{
	"logbook sessions": true, "logbook session show": true, "logbook commands": true,
	"logbook workspace list": true, "logbook project list": true,
	"logbook task list": true, "logbook task show": true,
}

// neverEmpty are the flags whose empty value would silently mean "not
// given" (no filter, the default data dir, the current directory as the
// workspace or project, a new id, standard output, the folder's name, no
// reviewer, $LOGBOOK_SOCKET, bwrap in PATH, no TLS file, no system
// socket) or something else than it reads as (an empty serve --http
// no HTTP at all, where "off" says so; an empty --watch a directory
// named ""): given empty, they are a usage error. A repeatable flag is
// refused when any of its values is empty.
var neverEmpty = []string{
	"data", "session", "by", "since", "tz", "workspace", "cwd", "mode", "id", "key", "out",
	"phase", "status", "project", "owned-by", "at", "socket", "name", "base", "push",
	"reviewer", "title", "principal", "role", "url", "nats-url", "creds",
	"http", "http-cert", "http-key", "watch", "bwrap", "admin-creds", "socket-dir", "socket-group",
}

// refuseEmpty returns a usage error for a flag of neverEmpty that cmd's
// command line gives an empty value (for a repeatable one, any empty
// value).
func refuseEmpty(cmd *cobra.Command) error {
	for _, name := range neverEmpty {
		f := cmd.Flags().Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		empty := f.Value.Type() == "string" && f.Value.String() == ""
		if sv, ok := f.Value.(pflag.SliceValue); ok && strings.HasPrefix(f.Value.Type(), "string") {
			empty = slices.Contains(sv.GetSlice(), "")
		}
		if empty {
			return usageErrorf("--%s is given empty: give it a value or leave the flag out", name)
		}
	}
	return nil
}

// flagError rewrites a flag value's parse error in the user's terms:
// `invalid argument "abc" for "--limit" flag: want a whole number`, not
// strconv's or time's own words.
func flagError(err error) error {
	msg := err.Error()
	i := strings.Index(msg, " flag: ")
	if i < 0 {
		return err
	}
	if name, ok := strings.CutPrefix(msg[:i], `invalid argument "" for "`); ok {
		return usageErrorf("%s is given empty: give it a value or leave the flag out", strings.TrimSuffix(name, `"`))
	}
	why := msg[i+len(" flag: "):]
	switch {
	case (strings.HasPrefix(why, "strconv.ParseInt") || strings.HasPrefix(why, "strconv.ParseUint")) && strings.HasSuffix(why, strconv.ErrRange.Error()):
		why = "a whole number too large for it"
	case strings.HasPrefix(why, "strconv.ParseInt"), strings.HasPrefix(why, "strconv.ParseUint"):
		why = "want a whole number"
	case strings.HasPrefix(why, "strconv.ParseFloat"):
		why = "want a number"
	case strings.HasPrefix(why, "strconv.ParseBool"):
		why = "want true or false"
	case strings.HasPrefix(why, "time: ") && durationShaped().MatchString(arg(msg[:i])):
		// time.ParseDuration says "invalid" of one past its range too.
		why = "a duration too long for it (at most 2562047h)"
	case strings.HasPrefix(why, "time: "):
		why = "want a duration such as 30s, 5m or 2h"
	default:
		return err
	}
	return errors.New(msg[:i] + " flag: " + why)
}

// dashArgHint adds to err, when it is the error of an unknown shorthand
// flag ("unknown shorthand flag: 'a' in -abc"), how to give -abc as an
// argument instead, since an id may begin with "-" (events.ValidID):
// after "--", as in "logbook session show -- -abc". c is the command
// that refused it; err is returned as it is otherwise, and for a command
// that takes no arguments.
func dashArgHint(c *cobra.Command, err error) error {
	msg := err.Error()
	if !strings.HasPrefix(msg, "unknown shorthand flag: ") {
		return err
	}
	_, tok, ok := strings.Cut(msg, " in ")
	if !ok || !strings.HasPrefix(tok, "-") || c == nil || !takesArgs(c) {
		return err
	}
	return fmt.Errorf("%s (an argument that begins with \"-\", such as an id, goes after --: %s -- %s)", msg, c.CommandPath(), tok)
}

// takesArgs reports whether c's usage line names an argument: a word
// after its name that is not a flag (ID, [FILE...], CMD).
func takesArgs(c *cobra.Command) bool {
	for _, w := range strings.Fields(c.Use)[1:] {
		if w = strings.Trim(w, "[]|"); w != "" && !strings.HasPrefix(w, "-") && w != "flags" {
			return true
		}
	}
	return false
}

// durationShaped matches a duration as time.ParseDuration writes one
// unit of it: a value it refuses only for its size. Compiled on first
// use: only a flag error asks, and every command's start paid for it.
var durationShaped = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h)$`)
})

// arg returns the value quoted in pflag's `invalid argument "V" for
// "--name"` (as strconv.Quote writes it), "" when there is none.
func arg(s string) string {
	q, ok := strings.CutPrefix(s, "invalid argument ")
	if !ok {
		return ""
	}
	v, err := strconv.QuotedPrefix(q)
	if err != nil {
		return ""
	}
	u, _ := strconv.Unquote(v)
	return u
}

// conventions applies the conventions above to root and every command
// under it.
func conventions(root *cobra.Command) {
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				if err == nil {
					err = unknownSubcommand(cmd, rest)
				}
				return err
			}
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		},
	})
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &usageError{dashArgHint(c, flagError(err))} })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2
		if readCommands[c.CommandPath()] {
			markReads(c)
		}
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
			c.Args = cobra.ArbitraryArgs
			c.RunE = unknownSubcommand
		} else if c.Args != nil {
			check := c.Args
			c.Args = func(cmd *cobra.Command, args []string) error {
				if err := check(cmd, args); err != nil {
					if m := err.Error(); strings.HasPrefix(m, "accepts ") || strings.HasPrefix(m, "requires at ") {
						// cobra's count of arguments says what, not which.
						err = fmt.Errorf("%s; usage: %s", strings.ReplaceAll(m, "arg(s)", "argument(s)"), cmd.UseLine())
					}
					return &usageError{err}
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// unknownSubcommand runs for a group: with no argument it prints the
// group's help; with one, it is a command the group does not have.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	msg += fmt.Sprintf("\n\nRun '%s --help' for its commands.", cmd.CommandPath())
	return &usageError{errors.New(msg)}
}

// helpForUnknown returns unknownSubcommand's usage error for a command
// line that asks for help (-h, --help) of a command a group does not have
// ("logbook nosuch --help"), where cobra would print the group's help and
// exit 0, telling a script that checks for a command that it exists. It
// returns nil for every other command line.
func helpForUnknown(root *cobra.Command, args []string) error {
	if !slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" }) {
		return nil
	}
	// The commands cobra adds itself, as Execute will.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	c, rest, err := root.Find(args)
	if err != nil || !c.HasSubCommands() {
		return nil
	}
	c.InitDefaultHelpFlag()
	if err := c.ParseFlags(rest); err != nil {
		return nil // Execute reports it
	}
	if extra := c.Flags().Args(); len(extra) > 0 {
		return unknownSubcommand(c, extra)
	}
	return nil
}

// exitCode maps the error a command line ended with to the process's
// exit code.
func exitCode(err error) int {
	if err == nil {
		return codeOK
	}
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	if _, ok := errors.AsType[*usageError](err); ok || isCobraUsage(err) {
		return codeUsage
	}
	return codeError
}

// isCobraUsage reports an error cobra returns for a command line itself
// (an unknown command at the root), before any of ours runs.
func isCobraUsage(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command ") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag") || strings.Contains(msg, "flag needs an argument") ||
		strings.HasPrefix(msg, "required flag(s)") || strings.HasPrefix(msg, "if any flags in the group") ||
		strings.HasPrefix(msg, "at least one of the flags in the group") || strings.HasPrefix(msg, "invalid argument ")
}

// userMessage returns err's message as a person reads it
// (term.Message).
func userMessage(err error) string { return term.Message(err.Error()) }

// plural returns "1 thing" or "n things" (term.Plural).
func plural(n int, noun string, pl ...string) string { return term.Plural(n, noun, pl...) }
