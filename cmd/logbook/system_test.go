package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// systemUser is a user of the host a system mode test runs a process as.
type systemUser struct {
	name     string
	uid, gid uint32
	home     string
}

// lookupSystemUser returns user name, or skips the test when the host
// has none (.ci/run makes lbtest and lbother).
func lookupSystemUser(t *testing.T, name string) systemUser {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("no user %s on this host (.ci/run makes it): %v", name, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return systemUser{name: name, uid: uint32(uid), gid: uint32(gid), home: u.HomeDir}
}

// run runs argv as u with stdin, $LOGBOOK_SOCKET set to sock (when not
// ""), in /, and returns its stdout, stderr and exit code.
func (u systemUser) run(t *testing.T, sock string, stdin string, argv ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Dir = "/"
	c.Env = []string{"HOME=" + u.home, "PATH=/usr/bin:/bin", "USER=" + u.name}
	if sock != "" {
		c.Env = append(c.Env, "LOGBOOK_SOCKET="+sock)
	}
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid}}
	out, errb, code, err := runCmd(c, stdin)
	if err != nil {
		t.Fatalf("run %v as %s: %v", argv, u.name, err)
	}
	return out, errb, code
}

// callSocketAs calls verb on the system socket at path from a thread
// whose effective uid and gid are u's: the kernel records them at
// connect, so the server sees u, as it would see u's own process (a
// request no logbook command would send). The thread is thrown away.
func callSocketAs(u systemUser, path, verb string, req, resp any) error {
	ch := make(chan error, 1)
	go func() {
		// The thread's own effective ids (raw syscalls: the runtime's
		// setresuid would change every thread's). It goes back to the
		// runtime once they are root's again; a thread thrown away takes
		// with it the parent-death signal of every child it started,
		// another test's node or serve.
		runtime.LockOSThread()
		restore := func() {
			_, _, eu := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0))
			_, _, eg := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), 0, ^uintptr(0))
			if eu == 0 && eg == 0 {
				runtime.UnlockOSThread()
			}
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(u.gid), ^uintptr(0)); e != 0 {
			restore()
			ch <- e
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(u.uid), ^uintptr(0)); e != 0 {
			restore()
			ch <- e
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := api.SocketCaller(path)(ctx, verb, req, resp)
		restore()
		ch <- err
	}()
	return <-ch
}

// TestSystemMode: serve runs as root with a data dir (0700) the agent's
// user, lbtest, cannot read, and answers it on a system socket. The
// agent cannot read the data dir, connect to NATS with anything it can
// read, nor reach the data dir's hook socket; its hooks and gated calls
// arrive through the system socket and are recorded, signed by serve; a
// verdict it sends naming someone else is recorded as lbtest, by uid;
// lbother, not let in on the socket, is refused with an error naming it;
// the log verifies with nothing quarantined.
func TestSystemMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("system mode needs two users: run as root")
	}
	t.Parallel()
	agent := lookupSystemUser(t, "lbtest")
	other := lookupSystemUser(t, "lbother")
	bin, hookBin, data := systemBins(t)
	if err := os.WriteFile(filepath.Join(data, "policy.toml"), []byte("review = [\"Bash(git push:*)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock, cancel, serveCmd := startSystemServe(t, bin, data, "--socket-allow", agent.name, "--socket-decide", agent.name)
	runDir := filepath.Dir(filepath.Dir(sock)) // the socket's directory's, 0755

	t.Run("DataDirUnreadable", func(t *testing.T) {
		for _, p := range []string{data, filepath.Join(data, "creds.json"), filepath.Join(data, "keys", "writer.key"), filepath.Join(data, "serve.json")} {
			if _, stderr, code := agent.run(t, "", "", "/bin/cat", p); code == 0 || !strings.Contains(stderr, "Permission denied") {
				t.Errorf("lbtest reads %s: exit %d, %s", p, code, stderr)
			}
		}
		// The data dir's own hook socket is behind the data dir.
		_, stderr, code := agent.run(t, "", `{"session_id":"x","hook_event_name":"Stop"}`, bin, "hook", "claude", "--data", data)
		if code == 0 {
			t.Errorf("lbtest's hook through the data dir: exit 0, %s", stderr)
		}
	})

	t.Run("NATSNeedsCredentials", func(t *testing.T) {
		var si struct {
			URL string `json:"url"`
		}
		b, err := os.ReadFile(filepath.Join(data, "serve.json"))
		if err != nil || json.Unmarshal(b, &si) != nil || si.URL == "" {
			t.Fatalf("serve.json: %v %s", err, b)
		}
		// No user, and a guessed one: refused by the server.
		for _, opts := range [][]nats.Option{nil, {nats.UserInfo("writer", "writer")}, {nats.UserInfo("admin", "")}} {
			if nc, err := nats.Connect(si.URL, append(opts, nats.Timeout(2*time.Second))...); err == nil {
				nc.Close()
				t.Errorf("NATS connection with %d options taken", len(opts))
			} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
				t.Errorf("NATS connection: %v, want an authorization violation", err)
			}
		}
		// The agent, told the URL, has no credentials to give.
		_, stderr, code := agent.run(t, "", "", bin, "sessions", "--nats-url", si.URL)
		if code == 0 {
			t.Errorf("lbtest's sessions over NATS: exit 0, %s", stderr)
		}
	})

	t.Run("HooksThroughTheSocket", func(t *testing.T) {
		p := `{"session_id":"sys1","transcript_path":"/tmp/x.jsonl","cwd":"/tmp","hook_event_name":"UserPromptSubmit","prompt":"hello"}`
		if _, stderr, code := agent.run(t, sock, p, hookBin, "claude"); code != 0 {
			t.Fatalf("logbook-hook as lbtest: exit %d: %s", code, stderr)
		}
		out, stderr, code := agent.run(t, sock, "", bin, "sessions", "--json")
		if code != 0 || !strings.Contains(out, `"sys1"`) {
			t.Fatalf("sessions as lbtest: exit %d: %s %s", code, out, stderr)
		}
		out, stderr, code = agent.run(t, sock, "", bin, "session", "show", "sys1")
		if code != 0 || !strings.Contains(out, "sys1") {
			t.Errorf("session show as lbtest: exit %d: %s %s", code, out, stderr)
		}
		out, stderr, code = agent.run(t, sock, "", bin, "audit", "sys1")
		if code != 0 || !strings.Contains(out, "session.started") || !strings.Contains(out, "signed=serve@") {
			t.Errorf("audit as lbtest: exit %d: %s %s", code, out, stderr)
		}
		// The hook's observation names the user who sent it, by the
		// kernel's word.
		wantSender := "sender=lbtest sender_uid=" + strconv.FormatUint(uint64(agent.uid), 10)
		if !strings.Contains(out, wantSender) {
			t.Errorf("audit as lbtest does not name the hook's sender (%s):\n%s", wantSender, out)
		}
	})

	t.Run("SessionOwnedByItsSender", func(t *testing.T) {
		// sys1 was opened by lbtest's hook: root, another user of the
		// socket, may not add to it, gated or not; nothing of it is kept.
		root := systemUser{name: "root", home: "/root"}
		want := "session sys1 belongs to lbtest (uid " + strconv.FormatUint(uint64(agent.uid), 10) + ")"
		p := `{"session_id":"sys1","transcript_path":"/tmp/x.jsonl","cwd":"/tmp","hook_event_name":"UserPromptSubmit","prompt":"from root"}`
		if _, stderr, code := root.run(t, sock, p, hookBin, "claude"); code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("root's hook naming lbtest's session: exit %d, %s; want exit 1 naming its owner", code, stderr)
		}
		g := `{"session_id":"sys1","transcript_path":"/tmp/x.jsonl","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"own1","tool_input":{"command":"git push origin main"}}`
		out, stderr, code := root.run(t, sock, g, bin, "hook", "claude", "--gate", "--budget", "20s")
		if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out+stderr, want) {
			t.Errorf("root's gated hook naming lbtest's session: exit %d, %s %s; want a deny naming its owner", code, out, stderr)
		}
		// lbtest's own gated call is recorded with lbtest as its sender.
		mine := `{"session_id":"sys1","transcript_path":"/tmp/x.jsonl","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Read","tool_use_id":"own2","tool_input":{"file_path":"/tmp/x"}}`
		if _, stderr, code := agent.run(t, sock, mine, bin, "hook", "claude", "--gate", "--budget", "20s"); code != 0 {
			t.Errorf("lbtest's gated Read: exit %d, %s", code, stderr)
		}
		text, err := exec.Command(bin, "audit", "sys1", "--data", data).Output()
		if err != nil || strings.Contains(string(text), "from root") || strings.Contains(string(text), "own1") || strings.Contains(string(text), "sender_uid=0") {
			t.Errorf("audit: %v, holds root's hooks:\n%s", err, text)
		}
		wantSender := "sender=lbtest sender_uid=" + strconv.FormatUint(uint64(agent.uid), 10)
		for line := range strings.Lines(string(text)) {
			if strings.Contains(line, "PreToolUse") && strings.Contains(line, "obs=") && !strings.Contains(line, wantSender) {
				t.Errorf("a gated hook's observation names no sender: %s", line)
			}
		}
		if !strings.Contains(string(text), "own2") {
			t.Errorf("audit holds no lbtest's gated Read:\n%s", text)
		}
	})

	t.Run("ProjectPolicyAsItsOwner", func(t *testing.T) {
		// A file only serve's user may read, and a copy of it owned by
		// lbother: neither may tell lbtest a word of what it holds.
		const secret = "lbsecret-7f3a = 1\n"
		secretFile := filepath.Join(runDir, "secret.toml")
		if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		project := func(name string, mk func(p string) error) string {
			dir := filepath.Join(runDir, name)
			if err := os.MkdirAll(filepath.Join(dir, ".logbook"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := mk(filepath.Join(dir, ".logbook", "policy.toml")); err != nil {
				t.Fatal(err)
			}
			return dir
		}
		owned := func(u systemUser, text string) func(p string) error {
			return func(p string) error {
				if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
					return err
				}
				return os.Chown(p, int(u.uid), int(u.gid))
			}
		}
		// Each call in a session of its own: denials in a row would trip
		// sys1's refusal breaker.
		gated := func(id, cwd string) string {
			p := `{"session_id":"sys-` + id + `","transcript_path":"/tmp/x.jsonl","cwd":"` + cwd + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"` + id + `","tool_input":{"command":"ls"}}`
			out, stderr, code := agent.run(t, sock, p, bin, "hook", "claude", "--gate", "--budget", "20s")
			if code != 0 {
				t.Errorf("gated ls in %s: exit %d: %s", cwd, code, stderr)
			}
			if strings.Contains(out+stderr, "lbsecret") {
				t.Errorf("gated ls in %s quotes the file: %s %s", cwd, out, stderr)
			}
			return out
		}
		link := project("plink", func(p string) error { return os.Symlink(secretFile, p) })
		if out := gated("pp1", link); !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "symbolic link") {
			t.Errorf("a project policy linked to serve's file: %s, want a deny naming the link", out)
		}
		copied := project("pother", owned(other, secret))
		if out := gated("pp2", copied); !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "owned by uid "+strconv.FormatUint(uint64(other.uid), 10)) {
			t.Errorf("a project policy of lbother's: %s, want a deny naming its owner", out)
		}
		mine := project("pmine", owned(agent, "deny = [\"Bash(ls)\"]\n"))
		if out := gated("pp3", mine); !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "Bash(ls)") {
			t.Errorf("a project policy of lbtest's own: %s, want its rule's deny", out)
		}
		bad := project("pbad", owned(agent, secret))
		if out := gated("pp4", bad); !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "policy.toml:1:") {
			t.Errorf("a project policy of lbtest's own that does not parse: %s, want a deny naming its line", out)
		}
		for _, id := range []string{"pp1", "pp2", "pp3", "pp4"} {
			out, err := exec.Command(bin, "audit", "sys-"+id, "--data", data).Output()
			if err != nil || strings.Contains(string(out), "lbsecret") {
				t.Errorf("audit sys-%s: %v, quotes the file:\n%s", id, err, out)
			}
		}
	})

	t.Run("VerdictRecordedAsThePeer", func(t *testing.T) {
		p := `{"session_id":"sys1","transcript_path":"/tmp/x.jsonl","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"tu1","tool_input":{"command":"git push origin main"}}`
		type result struct {
			out, stderr string
			code        int
		}
		done := make(chan result, 1)
		go func() {
			out, stderr, code := agent.run(t, sock, p, bin, "hook", "claude", "--gate", "--budget", "40s")
			done <- result{out, stderr, code}
		}()
		var reviews gate.ReviewsReply
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if err := api.SocketCaller(sock)(t.Context(), gate.VerbReviews, gate.ReviewsRequest{}, &reviews); err != nil {
				t.Fatal(err)
			}
			if len(reviews.Reviews) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no review opened")
			}
		}
		// lbtest's own request, naming someone else in every way a
		// decoder would take.
		forged := map[string]any{"session": "sys1", "id": "tu1", "verdict": "allow", "reason": "looks fine",
			"actor": "person:alice@elsewhere", "Actor": "person:bob", "by": "carol", "ref": ulid.Make().String()}
		var dr gate.DecideReply
		if err := callSocketAs(agent, sock, gate.VerbReviewDecide, forged, &dr); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if r.code != 0 || !strings.Contains(r.out, `"allow"`) {
			t.Errorf("gated hook: exit %d, answer %s, %s", r.code, r.out, r.stderr)
		}
		want := "person:lbtest@"
		wantUID := "uid=" + strconv.FormatUint(uint64(agent.uid), 10)
		out, err := exec.Command(bin, "audit", "sys1", "--data", data).Output()
		text := string(out)
		if err != nil || !strings.Contains(text, "review.decided") || !strings.Contains(text, want) || !strings.Contains(text, wantUID) {
			t.Errorf("audit: %v\n%s", err, text)
		}
		for _, name := range []string{"alice", "bob", "carol"} {
			if strings.Contains(text, name) {
				t.Errorf("audit names %s, whom the request named:\n%s", name, text)
			}
		}
	})

	t.Run("OtherUserRefused", func(t *testing.T) {
		_, stderr, code := other.run(t, sock, "", bin, "sessions")
		want := "connection refused: lbother (uid " + strconv.FormatUint(uint64(other.uid), 10) + ") may not use this socket (serve --socket-allow lets in lbtest)"
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("sessions as lbother: exit %d, %s; want %q", code, stderr, want)
		}
		p := `{"session_id":"sys2","transcript_path":"/tmp/x.jsonl","cwd":"/tmp","hook_event_name":"UserPromptSubmit","prompt":"hi"}`
		_, stderr, code = other.run(t, sock, p, hookBin, "claude")
		if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "not kept") {
			t.Errorf("hook as lbother: exit %d, %s", code, stderr)
		}
		// A person's verb is refused to one not let in, before it is read.
		err := callSocketAs(other, sock, gate.VerbReviewDecide, map[string]string{"id": "tu1"}, nil)
		if !errors.Is(err, api.ErrPeerRefused) {
			t.Errorf("decide as lbother: %v", err)
		}
	})

	t.Run("DoctorThroughTheSocket", func(t *testing.T) {
		out, stderr, code := agent.run(t, sock, "", bin, "doctor")
		if !regexp.MustCompile(`(?m)^ok +socket +serve answers on `+regexp.QuoteMeta(sock)+` and lets this user in, \d+ messages in the log`).MatchString(out) || strings.Contains(out, "data dir") {
			t.Errorf("doctor as lbtest: exit %d\n%s%s", code, out, stderr)
		}
		out, stderr, code = other.run(t, sock, "", bin, "doctor")
		if code != 1 || !regexp.MustCompile(`(?m)^fail +socket +.*lbother .*may not use this socket`).MatchString(out) || !strings.Contains(out, "fix: ask whoever runs serve to add your user") {
			t.Errorf("doctor as lbother: exit %d\n%s%s", code, out, stderr)
		}
		out, _, code = agent.run(t, filepath.Join(runDir, "nosuch.sock"), "", bin, "doctor")
		if code != 1 || !regexp.MustCompile(`(?m)^fail +socket +no .*nosuch.sock: no serve in system mode listens there`).MatchString(out) {
			t.Errorf("doctor on a missing socket: exit %d\n%s", code, out)
		}
	})

	t.Run("NothingForged", func(t *testing.T) {
		cancel()
		serveCmd.Wait()
		out, err := exec.Command(bin, "replay", "--verify", "--data", data).CombinedOutput()
		if err != nil {
			t.Errorf("replay --verify: %v\n%s", err, out)
		}
		if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket left after serve stopped: %v", err)
		}
	})
}

// TestSocketPath: which socket a command asks, by the precedence the
// README states: --socket; else none when --data, --nats-url or --creds
// is given; else $LOGBOOK_SOCKET ($LOGBOOK_DATA aside); a directory names
// the socket in it. --socket with --data is a usage error.
func TestSocketPath(t *testing.T) {
	dir := t.TempDir()
	inDir := filepath.Join(dir, api.SystemSocketName)
	for _, c := range []struct {
		name string
		g    globals
		env  string
		want string
	}{
		{"flag", globals{socket: "/s/a.sock"}, "/s/b.sock", "/s/a.sock"},
		{"flag wins over data", globals{socket: "/s/a.sock", data: "/d"}, "", "/s/a.sock"},
		{"env", globals{}, "/s/b.sock", "/s/b.sock"},
		{"env under data", globals{data: "/d"}, "/s/b.sock", ""},
		{"env under nats-url", globals{natsURL: "nats://x"}, "/s/b.sock", ""},
		{"env under creds", globals{credsPath: "/c.json"}, "/s/b.sock", ""},
		{"dir", globals{}, dir, inDir},
		{"none", globals{}, "", ""},
	} {
		t.Setenv("LOGBOOK_SOCKET", c.env)
		t.Setenv("LOGBOOK_DATA", "/elsewhere")
		if got := c.g.socketPath(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	g := globals{socket: "/s/a.sock", data: "/d"}
	if _, err := socketCaller(&g, g.socketPath()); exitCode(err) != codeUsage {
		t.Errorf("--socket with --data: %v, want a usage error", err)
	}
}

// TestSystemSocket_HookNoAnswerUnknown: `logbook hook claude` through a
// system socket that never answers fails saying whether serve kept the
// payload is unknown, not that it may not be kept.
func TestSystemSocket_HookNoAnswerUnknown(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, api.SystemSocketName)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	t.Setenv("LOGBOOK_DATA", filepath.Join(dir, "data"))
	g := &globals{socket: sock}
	p := []byte(`{"session_id":"s1","transcript_path":"/tmp/x.jsonl","cwd":"/tmp","hook_event_name":"Stop"}`)
	err = hookViaSocket(t.Context(), g, sock, p)
	if err == nil || strings.Contains(err.Error(), "may not be kept") || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("hook through a socket that never answers: %v", err)
	}
}

// TestSocket_HooksInstallNamesTheSocket: `hooks install` run with
// $LOGBOOK_SOCKET (or --socket) writes hook commands that name that
// socket, gated or not, so a Claude Code started without the variable
// still reaches serve rather than a data dir of its own.
func TestSocket_HooksInstallNamesTheSocket(t *testing.T) {
	for _, c := range []struct {
		name string
		env  string
		g    globals
	}{{"env", "/run/lb test/logbook.sock", globals{}}, {"flag", "", globals{socket: "/run/lb test/logbook.sock"}}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("LOGBOOK_SOCKET", c.env)
			t.Setenv("LOGBOOK_DATA", "")
			var out bytes.Buffer
			g := c.g
			g.stdout, g.stderr = &out, &out
			if err := hooksEdit(&g, hooksFlags{project: dir, gate: true, budget: 30 * time.Second}, true); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
			if err != nil {
				t.Fatal(err)
			}
			want := `--socket '/run/lb test/logbook.sock' claude`
			if n := strings.Count(string(b), strings.ReplaceAll(want, "'", `'`)); n < 2 {
				t.Errorf("settings.json names the socket %d times, want both the recorder and the gate:\n%s", n, b)
			}
		})
	}
}

// systemBins builds logbook and logbook-hook into a folder every user may
// run them from, and makes serve's data dir (0700, root's): what the
// system mode tests start from.
func systemBins(t *testing.T) (bin, hookBin, data string) {
	t.Helper()
	bin = soakBuild(t)
	hookBin = hookBuild(t, bin)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	data = filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	return bin, hookBin, data
}

// startSystemServe starts `bin serve` on data with --workers 0 and a
// system socket in a directory of its own, plus args, and waits until it
// answers on the socket. It returns the socket, what stops serve (SIGTERM)
// and serve's command, whose Wait the caller may call after stop; serve's
// log is printed if the test fails.
func startSystemServe(t *testing.T, bin, data string, args ...string) (sock string, stop func(), serveCmd *exec.Cmd) {
	t.Helper()
	runDir, err := os.MkdirTemp("", "lbsystem")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runDir) })
	if err := os.Chmod(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	sockDir := filepath.Join(runDir, "run")
	sock = filepath.Join(sockDir, api.SystemSocketName)
	ctx, cancel := context.WithCancel(context.Background())
	serveCmd = exec.CommandContext(ctx, bin, append([]string{"serve", "--data", data, "--workers", "0", "--socket-dir", sockDir}, args...)...)
	serveCmd.Cancel = func() error { return serveCmd.Process.Signal(syscall.SIGTERM) }
	sandboxtest.DieWithTest(serveCmd)
	serveCmd.WaitDelay = 20 * time.Second
	var serveLog bytes.Buffer
	serveCmd.Stdout, serveCmd.Stderr = &serveLog, &serveLog
	if err := sandboxtest.Start(serveCmd); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		serveCmd.Wait()
		if t.Failed() {
			t.Logf("serve's log:\n%s", serveLog.String())
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(data, "serve.json")); err == nil {
			if _, err := os.Stat(sock); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", serveLog.String())
		}
	}
	return sock, cancel, serveCmd
}

// TestSystemMode_ReadsOwnSessions: through a system socket that lets in
// lbtest and lbother and names no decider, each reads only the sessions
// its own hooks opened: `sessions` lists them alone, and `session show`
// and `audit` of the other's session answer as for an id that does not
// exist; root reads both.
func TestSystemMode_ReadsOwnSessions(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("system mode needs two users: run as root")
	}
	t.Parallel()
	a := lookupSystemUser(t, "lbtest")
	b := lookupSystemUser(t, "lbother")
	bin, hookBin, data := systemBins(t)
	sock, _, _ := startSystemServe(t, bin, data, "--socket-allow", a.name+","+b.name)
	for _, u := range []struct {
		who systemUser
		sid string
	}{{a, "own-a"}, {b, "own-b"}} {
		p := `{"session_id":"` + u.sid + `","transcript_path":"/tmp/x.jsonl","cwd":"/tmp","hook_event_name":"UserPromptSubmit","prompt":"hi"}`
		if _, stderr, code := u.who.run(t, sock, p, hookBin, "claude"); code != 0 {
			t.Fatalf("hook as %s: exit %d, %s", u.who.name, code, stderr)
		}
	}
	out, stderr, code := a.run(t, sock, "", bin, "sessions", "--all")
	if code != 0 || !strings.Contains(out, "own-a") || strings.Contains(out, "own-b") {
		t.Errorf("sessions as lbtest: exit %d, %s %s; want own-a alone", code, out, stderr)
	}
	for _, args := range [][]string{{"session", "show", "own-b"}, {"audit", "own-b"}} {
		out, stderr, code := a.run(t, sock, "", append([]string{bin}, args...)...)
		if code == 0 || !strings.Contains(stderr, "not found") || strings.Contains(out+stderr, "lbother") {
			t.Errorf("%v as lbtest: exit %d, %s %s; want it not found, naming nobody", args, code, out, stderr)
		}
	}
	if out, stderr, code := a.run(t, sock, "", bin, "audit", "own-a"); code != 0 || !strings.Contains(out, "sender=lbtest") {
		t.Errorf("audit own-a as lbtest: exit %d, %s %s", code, out, stderr)
	}
	// A prefix of both ids names lbtest's own session alone: the other
	// user's is neither listed as a candidate nor counted.
	if out, stderr, code := a.run(t, sock, "", bin, "audit", "own-"); code != 0 || !strings.Contains(out, "sender=lbtest") || strings.Contains(out+stderr, "own-b") {
		t.Errorf("audit own- as lbtest: exit %d, %s %s; want own-a's audit, never own-b", code, out, stderr)
	}
	if out, stderr, code := b.run(t, sock, "", bin, "session", "show", "own-b"); code != 0 || !strings.Contains(out, "own-b") {
		t.Errorf("session show own-b as lbother: exit %d, %s %s", code, out, stderr)
	}
	root := exec.Command(bin, "sessions", "--all", "--socket", sock)
	if out, err := root.CombinedOutput(); err != nil || !strings.Contains(string(out), "own-a") || !strings.Contains(string(out), "own-b") {
		t.Errorf("sessions as root: %v, %s; want both", err, out)
	}
}

// TestDataDirOfAnotherUser_Unprivileged: a user given a data dir only
// its owner may read is told whose it is, not a permission error of the
// first file a command happens to read (redact.txt for a review's
// reason).
func TestDataDirOfAnotherUser_Unprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run as another user")
	}
	t.Parallel()
	u := lookupSystemUser(t, "lbtest")
	bin := soakBuild(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	runDir, err := os.MkdirTemp("", "lbowner")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(runDir) })
	if err := os.Chmod(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(runDir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "redact.txt"), []byte("# rules\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := u.run(t, "", "", bin, "--data", data, "review", "allow", "tug1", "--reason", "ok")
	want := "data dir " + data + " belongs to uid 0, not you (uid " + strconv.FormatUint(uint64(u.uid), 10) + ")"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("review allow as lbtest on root's data dir: exit %d, %s; want %q", code, stderr, want)
	}
	transcript := filepath.Join(runDir, "t.jsonl")
	if err := os.WriteFile(transcript, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Every verb says so, those that read the store among them, rather
	// than take the data dir it cannot look into for an empty one.
	for _, args := range [][]string{{"sessions"}, {"events", "tail"}, {"commands"}, {"usage"}, {"audit", "x"}, {"replay"}, {"verify"}, {"doctor"}, {"import", "claude", transcript}} {
		out, stderr, code := u.run(t, "", "", append([]string{bin, "--data", data}, args...)...)
		said := out + stderr // doctor's table is its stdout
		if args[0] == "doctor" {
			want = data + " belongs to uid 0, not you"
		}
		if code == 0 || !strings.Contains(said, want) || strings.Contains(said, "no Logbook data") {
			t.Errorf("%s as lbtest on root's data dir: exit %d, %s; want %q", strings.Join(args, " "), code, said, want)
		}
	}
}

// TestSystemMode_SocketGroup: with --socket-group the socket is 0660 and
// that group's, so the kernel refuses a user outside the group at connect,
// whatever --socket-allow says, and serve reads nothing of it; a member
// is let in as before. A group the host lacks is a usage error.
func TestSystemMode_SocketGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("system mode needs two users: run as root")
	}
	t.Parallel()
	a := lookupSystemUser(t, "lbtest")
	b := lookupSystemUser(t, "lbother")
	bin, _, data := systemBins(t)
	group := strconv.FormatUint(uint64(a.gid), 10)
	sock, _, _ := startSystemServe(t, bin, data, "--socket-allow", a.name+","+b.name, "--socket-group", group)
	st, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); st.Mode().Perm() != 0o660 || sys.Gid != a.gid {
		t.Errorf("socket mode %04o group %d, want 0660 group %d", st.Mode().Perm(), sys.Gid, a.gid)
	}
	if out, stderr, code := a.run(t, sock, "", bin, "sessions", "--all"); code != 0 {
		t.Errorf("sessions as lbtest, in the group: exit %d, %s %s", code, out, stderr)
	}
	out, stderr, code := b.run(t, sock, "", bin, "sessions", "--all")
	if code != 1 || !strings.Contains(stderr, "permission denied: this user cannot reach the socket") {
		t.Errorf("sessions as lbother, outside the group: exit %d, %s %s; want the kernel's refusal", code, out, stderr)
	}
	c := sandboxtest.DieWithTest(exec.Command(bin, "serve", "--data", t.TempDir(), "--socket-dir", t.TempDir(), "--socket-group", "no-such-group-here"))
	if out, err := c.CombinedOutput(); c.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), `--socket-group "no-such-group-here": no such group on this host`) {
		t.Errorf("serve --socket-group of no group: %v\n%s", err, out)
	}
}

// TestSystemSocket_NotAnsweredThere: a command whose question the system
// socket does not answer (commands, session end, replay --verify) exits
// 2 naming the socket and asking for --data, rather than failing with
// the socket's verb name; one it answers (sessions) still goes through.
func TestSystemSocket_NotAnsweredThere(t *testing.T) {
	t.Parallel()
	bin, _, data := systemBins(t)
	sock, stop, serveCmd := startSystemServe(t, bin, data)
	for _, args := range [][]string{
		{"commands"},
		{"session", "end", "5e551011-0000-4000-8000-000000000001", "--reason", "x"},
		{"replay", "--verify"},
	} {
		c := exec.Command(bin, append([]string{"--socket", sock}, args...)...)
		c.Env = append(os.Environ(), "LOGBOOK_DATA="+filepath.Join(t.TempDir(), "none"))
		out, stderr, code, err := runCmd(c, "")
		if err != nil {
			t.Fatal(err)
		}
		if code != 2 || !strings.Contains(stderr, "the system socket "+sock+" does not answer it") || !strings.Contains(stderr, "give --data DIR") || strings.Contains(stderr, "verb") {
			t.Errorf("%v through the socket: exit %d, stdout %q, stderr %q; want exit 2 naming the socket and --data", args, code, out, stderr)
		}
	}
	c := exec.Command(bin, "--socket", sock, "sessions")
	if out, stderr, code, err := runCmd(c, ""); err != nil || code != 0 {
		t.Errorf("sessions through the socket: exit %d, %v, %s %s", code, err, out, stderr)
	}
	stop()
	serveCmd.Wait()
}
