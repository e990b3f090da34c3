// Package execfast is `logbook-exec`, the small binary an agent runs a
// command through: `logbook-exec ARGS…` is `logbook exec ARGS…`, run by
// the data dir's running serve on its exec socket (adapters/execsock,
// <data dir>/exec.sock), so that the caller pays neither logbook's
// start-up (its packages' initialization, tens of milliseconds of a
// loaded machine's CPU) nor a NATS connection and consumer of its own.
// serve parses the arguments and runs exec as `logbook exec` would, with
// this process's working directory, its entries of the variables exec
// passes on (InheritedEnv) and its user (from the socket's peer
// credentials, never from what it says); this binary writes what exec
// prints and exits with exec's status.
//
// Cases it does not handle itself it hands to `logbook exec` with the
// same arguments (found beside this binary, else on $PATH, and run in
// this process's place, execve(2)): help (-h, --help), a flag it does
// not know, --nats-url, --creds or --socket (or $LOGBOOK_NATS_URL,
// $LOGBOOK_CREDS, and $LOGBOOK_SOCKET without --data), and a data dir with no exec socket, or one nothing
// listens on (no serve runs, or an older one): logbook then says what is
// wrong, or runs the command its own way. Once serve has the request
// nothing is handed over, so a command never runs twice.
package execfast

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/logbook-dev/logbook/adapters/datadir/locate"
	"github.com/logbook-dev/logbook/adapters/execsock"
)

// InheritedEnv are the variables `logbook exec` passes on from the
// caller's environment unless told not to: worker.InheritedEnv, which a
// test in cmd/logbook holds this equal to.
var InheritedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ"}

// valueFlags are the flags of `logbook exec` (its own and the global
// ones) that take a value, as the next argument unless given as
// --flag=value.
var valueFlags = map[string]bool{
	"session": true, "mode": true, "cwd": true, "workspace": true, "wait": true, "id": true, "key": true,
	"env": true, "justification": true, "data": true, "nats-url": true, "creds": true, "socket": true,
}

// boolFlags are the flags of `logbook exec` that take no value (or one
// given as --flag=value).
var boolFlags = map[string]bool{"tty": true, "no-env": true, "elevate": true, "raw": true, "json": true}

// handedFlags are the flags whose exec `logbook exec` runs itself: they
// name another server than the data dir's own serve.
var handedFlags = map[string]bool{"nats-url": true, "creds": true, "socket": true}

// Main runs `logbook-exec args…` and returns its exit status: exec's
// (0 the command exited 0 or went on in the background; the command's
// status otherwise; 1 an error; 2 a usage mistake), or 1 with the
// reason on stderr when serve could not be asked and logbook could not
// be run. args are the arguments after the program name; logbook names
// the full binary to hand other cases to ("" finds `logbook` beside this
// binary, then on $PATH). A hand-over does not return unless it fails.
func Main(args []string, stdout, stderr io.Writer, logbook string) int {
	rest, data, ok := parseArgs(args)
	if !ok || os.Getenv("LOGBOOK_NATS_URL") != "" || os.Getenv("LOGBOOK_CREDS") != "" ||
		(data == "" && os.Getenv("LOGBOOK_SOCKET") != "") {
		return handOver(args, stderr, logbook)
	}
	dir, err := locate.Path(data)
	if err != nil {
		return handOver(args, stderr, logbook)
	}
	cwd, err := os.Getwd()
	if c := filepath.Clean(cwd); err == nil && (strings.HasPrefix(c+"/", "/proc/") || strings.HasPrefix(c+"/", "/dev/fd/")) {
		// $PWD names the directory through /proc, which serve would
		// resolve as its own: the kernel's name for it instead.
		cwd, err = syscall.Getwd()
	}
	if err != nil {
		fmt.Fprintf(stderr, "logbook-exec: working directory: %v\n", err)
		return 1
	}
	if err := execsock.CheckText("the working directory", cwd); err != nil {
		fmt.Fprintf(stderr, "logbook-exec: exec: %v\n", err)
		return 2
	}
	req := execsock.Request{Args: rest, Cwd: cwd, Env: []string{}}
	for _, k := range InheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			req.Env = append(req.Env, k+"="+v)
		}
	}
	if err := execsock.CheckCommand(req.Args, req.Env); err != nil {
		fmt.Fprintf(stderr, "logbook-exec: exec: %v\n", err)
		return 2
	}
	code, err := execsock.CallExiting(dir, req, stdout, stderr) // Main's caller exits
	if errors.Is(err, execsock.ErrNoSocket) || errors.Is(err, execsock.ErrRefused) {
		return handOver(args, stderr, logbook) // serve never had it
	}
	if err != nil {
		fmt.Fprintf(stderr, "logbook-exec: %v\n", err)
		return 1
	}
	return code
}

// parseArgs returns args without --data and its value, and the value
// (""), or false when args are a case for `logbook exec` itself: none at
// all, help, a flag it does not know, or one of handedFlags. Only what
// comes before "--" is read as flags.
func parseArgs(args []string) (rest []string, data string, ok bool) {
	if len(args) == 0 {
		return nil, "", false // logbook exec says what is missing
	}
	rest = make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(rest, args[i:]...), data, true
		}
		if a == "-h" || a == "--help" || strings.HasPrefix(a, "--help=") {
			return nil, "", false
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			if strings.HasPrefix(a, "-") && a != "-" {
				return nil, "", false // a shorthand exec does not have
			}
			rest = append(rest, a) // the command, flags interspersed
			continue
		}
		name, value, hasValue := strings.Cut(name, "=")
		switch {
		case handedFlags[name]:
			return nil, "", false
		case boolFlags[name]:
			rest = append(rest, a)
		case valueFlags[name]:
			if !hasValue {
				if i+1 >= len(args) {
					return nil, "", false // logbook says what is missing
				}
				i++
				value = args[i]
			}
			if name == "data" {
				if value == "" {
					return nil, "", false
				}
				data = value
				continue
			}
			rest = append(rest, "--"+name+"="+value)
		default:
			return nil, "", false
		}
	}
	return rest, data, true
}

// handOver runs `logbook exec args…` in this process's place and does
// not return unless it cannot: then it says why on stderr and returns 1.
func handOver(args []string, stderr io.Writer, logbook string) int {
	if logbook == "" {
		logbook = findLogbook()
	}
	path := logbook
	if !strings.Contains(path, "/") {
		var err error
		if path, err = lookPath(path); err != nil {
			fmt.Fprintf(stderr, "logbook-exec: cannot run `logbook exec`: %s: %v\n", logbook, err)
			return 1
		}
	}
	err := syscall.Exec(path, append([]string{"logbook", "exec"}, args...), os.Environ())
	fmt.Fprintf(stderr, "logbook-exec: cannot run `logbook exec`: %s: %v\n", path, err)
	return 1
}

// findLogbook returns the logbook binary beside this one, else "logbook"
// (to be found on $PATH).
func findLogbook() string {
	self, err := os.Executable()
	if err != nil {
		return "logbook"
	}
	if p := filepath.Join(filepath.Dir(self), "logbook"); p != self {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return "logbook"
}

// lookPath finds name on $PATH as a shell would: the first regular,
// executable file of that name.
func lookPath(name string) (string, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("not found on $PATH")
}
