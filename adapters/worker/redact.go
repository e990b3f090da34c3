package worker

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/sandbox"
)

// CheckSecrets reports, wrapping events.ErrRejected, an argv element or
// environment value that is a secret: one red (nil: redact.Default())
// takes for a secret, the value of a flag that takes one
// (redact.SecretArgs: --password, --token, sshpass -p, curl -u
// user:password, the same inside a sh -c script), or the value of an
// environment variable named for one (redact.SecretAssignment:
// MYSQL_PWD, PGPASSWORD, API_TOKEN). A request is kept in the log for
// good, and what it says is what runs, so a secret cannot be redacted
// out of it, only kept out. The error names the position (argv[2], the
// flag, --env NAME), never the value. A worker checks again, by the same
// rules, every request it is delivered (see Worker), so one appended
// without this check is refused rather than run.
func CheckSecrets(req command.Request, red *redact.Redactor) error {
	return secretError(secretIn(req.Argv, req.Env, red))
}

// CheckNames reports, wrapping events.ErrRejected and a
// *redact.FieldError, the first of a request's names that red (nil:
// redact.Default()) takes for a secret: the command id (id; "" checks
// none), the session, the workspace and the working directory. Each is
// kept in the log for good, and the folders are where the command runs:
// none can be redacted, only refused. The error names the field and the
// rule, never the value.
func CheckNames(id string, req command.Request, red *redact.Redactor) error {
	if err := namesSecret(id, req.Session, req.Workspace, req.Cwd, red); err != nil {
		return fmt.Errorf("request: %w: %w", events.ErrRejected, err)
	}
	return nil
}

// namesSecret is CheckNames' check, the redact.FieldError alone.
func namesSecret(id, session, workspace, cwd string, red *redact.Redactor) error {
	for _, f := range []struct{ field, noun, v string }{
		{"command id", "id", id}, {"session", "session id", session}, {"workspace", "folder", workspace}, {"cwd", "folder", cwd},
	} {
		if err := red.CheckField(f.field, f.noun, f.v); err != nil {
			return err
		}
	}
	return nil
}

// secretError returns the refusal of a request that carries a secret
// where says (secretIn's words), or nil when where is "".
func secretError(where string) error {
	if where == "" {
		return nil
	}
	return fmt.Errorf("request: %w: %s; the request is kept in the log for good, so pass it another way (a file in the workspace, or stdin)", events.ErrRejected, where)
}

// CheckEnv reports, wrapping events.ErrRejected, what is wrong with env,
// a command's environment ("KEY=VALUE" each): first an entry that is a
// secret (by CheckSecrets' rules: one red, nil meaning redact.Default(),
// takes for a secret, or the value of a variable named for one), then an
// entry that is not KEY=VALUE with a non-empty KEY (command.CheckEnv,
// wrapping command.ErrEnvShape). It is the one check of an environment:
// every request goes through it (CheckRequest), and exec runs it on its
// --env before it connects, so both refuse the same input in the same
// words. The error names the variable (command.EnvName; its position
// when the name itself looks like a secret), never its value.
func CheckEnv(env []string, red *redact.Redactor) error {
	if red == nil {
		red = redact.Default()
	}
	if err := secretError(envSecretIn(env, red)); err != nil {
		return err
	}
	return envShape(env)
}

// envShape is CheckEnv's check of env's shape (command.CheckEnv), as a
// rejected request.
func envShape(env []string) error {
	if err := command.CheckEnv(env); err != nil {
		return fmt.Errorf("request: %w: %w", events.ErrRejected, err)
	}
	return nil
}

// secretIn returns where argv or env (as in command.Request) carries a
// secret by CheckSecrets' rules, in words that name the position and
// never the value ("argv[2] looks like a secret (the value of
// --token)"), or "" when neither does. red nil means redact.Default().
func secretIn(argv, env []string, red *redact.Redactor) string {
	if red == nil {
		red = redact.Default()
	}
	for i, a := range argv {
		if red.Redact(a) != a {
			return fmt.Sprintf("argv[%d] looks like a secret", i)
		}
	}
	for _, s := range redact.SecretArgs(argv) {
		in := ""
		if s.InScript {
			in = " in its shell script"
		}
		return fmt.Sprintf("argv[%d] looks like a secret (the value of %s%s)", s.Index, s.Flag, in)
	}
	return envSecretIn(env, red)
}

// envSecretIn is secretIn for env alone, by red (not nil): the first
// entry that red takes for a secret or whose value is a variable's named
// for one (redact.SecretAssignment: MYSQL_PWD, PGPASSWORD, API_TOKEN),
// named by command.EnvName ("environment variable NAME"), or by its
// position ("env[3]") when its name itself looks like a secret.
func envSecretIn(env []string, red *redact.Redactor) string {
	for i, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if red.Redact(kv) != kv || red.Redact(v) != v || redact.SecretAssignment(k, v) {
			name := command.EnvName(i, kv)
			if red.Redact(k) != k {
				name = fmt.Sprintf("env[%d]", i)
			}
			return name + " looks like a secret"
		}
	}
	return ""
}

// redactArgv returns argv redacted for the worker's own log lines: the
// values of secret-bearing flags replaced (redact.RedactArgs), then red's
// rules.
func redactArgv(red *redact.Redactor, argv []string) []string {
	return redact.RedactArgs(red, argv)
}

// outIdle is how long a partial line of output waits for the rest of its
// line before it is redacted and stored as it is (a prompt without a
// newline must show).
const outIdle = 150 * time.Millisecond

// outRedactor redacts a command's output by the worker's rules
// (Config.Redactor), one redact.Stream per stream (see redact.Stream for
// what holds across chunk boundaries), before the publisher stores it.
// Stored chunks carry offsets of the redacted stream, so the headers stay
// consistent with the bytes stored.
type outRedactor struct {
	mu      sync.Mutex
	red     *redact.Redactor
	streams map[sandbox.Stream]*redact.Stream
	offsets map[sandbox.Stream]int64 // stored bytes per stream
	timer   *time.Timer
	closed  bool
	queue   func(sandbox.Chunk) // hands a redacted chunk to the publisher
}

func newOutRedactor(red *redact.Redactor, queue func(sandbox.Chunk)) *outRedactor {
	return &outRedactor{red: red, streams: map[sandbox.Stream]*redact.Stream{}, offsets: map[sandbox.Stream]int64{}, queue: queue}
}

// write takes one raw chunk, queues what is ready, redacted, and arms the
// idle flush for what is held.
func (o *outRedactor) write(c sandbox.Chunk) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	s := o.streams[c.Stream]
	if s == nil {
		s = o.red.NewStream()
		o.streams[c.Stream] = s
	}
	o.send(c.Stream, s.Write(c.Data))
	if s.Held() > 0 {
		if o.timer == nil {
			o.timer = time.AfterFunc(outIdle, o.idle)
		} else {
			o.timer.Reset(outIdle)
		}
	}
}

// idle flushes what every stream holds (redact.Stream.Flush: the inside
// of an open private key block never goes, and the block stays open).
func (o *outRedactor) idle() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.flushLocked()
	}
}

// close lets go of everything held (redact.Stream.Close: an open private
// key block is dropped); later writes and idle flushes do nothing.
func (o *outRedactor) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	if o.timer != nil {
		o.timer.Stop()
	}
	for _, st := range []sandbox.Stream{sandbox.PTY, sandbox.Stdout, sandbox.Stderr} {
		if s := o.streams[st]; s != nil {
			o.send(st, s.Close())
		}
	}
	o.closed = true
}

func (o *outRedactor) flushLocked() {
	for _, st := range []sandbox.Stream{sandbox.PTY, sandbox.Stdout, sandbox.Stderr} {
		if s := o.streams[st]; s != nil {
			o.send(st, s.Flush())
		}
	}
}

// send queues b in pieces of at most sandbox.MaxChunk bytes.
func (o *outRedactor) send(st sandbox.Stream, b []byte) {
	for len(b) > 0 {
		n := min(len(b), sandbox.MaxChunk)
		o.queue(sandbox.Chunk{Stream: st, Offset: o.offsets[st], Data: b[:n:n]})
		o.offsets[st] += int64(n)
		b = b[n:]
	}
}
