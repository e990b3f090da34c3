package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/hooksock"
)

// sockSession is the session the hook socket's tests prompt in.
const sockSession = "5e551011-0000-4000-8000-0000000050c0"

// sockPrompt is a UserPromptSubmit payload of sockSession with prompt id
// p-<i>.
func sockPrompt(i int) string {
	return fmt.Sprintf(`{"session_id":%q,"hook_event_name":"UserPromptSubmit","prompt_id":"p-%02d","prompt":"prompt %02d"}`, sockSession, i, i)
}

// hookBin returns a folder holding logbook-hook and hooksockcall: this
// test binary under those names (see TestMain). No logbook is there, so
// a hook that hands its payload over fails, loudly.
func hookBin(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"logbook-hook", "hooksockcall"} {
		if err := os.Symlink(self, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runSockHook runs logbook-hook from bin on data dir data with payload, with
// only bin on $PATH, and returns its exit code and standard error.
func runSockHook(t *testing.T, bin, data, payload string) (int, string) {
	t.Helper()
	c := exec.Command(filepath.Join(bin, "logbook-hook"), "--data", data, "claude")
	c.Env = []string{"PATH=" + bin, "HOME=" + os.Getenv("HOME")}
	_, stderr, code, err := runCmd(c, payload)
	if err != nil {
		t.Fatal(err)
	}
	return code, stderr
}

// prompts returns the prompt ids observed in sockSession's log, in order.
func prompts(t *testing.T, b *backend) []string {
	t.Helper()
	b.settle(t.Context()) // the hooks serve took are in the log
	return signalIDs(observations(t, t.Context(), b, sockSession))
}

// spooled returns the entries waiting in data's spool.
func spooled(t *testing.T, data string) []string {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(data, "spool", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// TestHookSock_Delivers: serve listens on hook.sock in its data dir, a
// socket only its owner may use, and logbook-hook delivers there: the
// payload lands once, nothing is spooled, nothing is handed to logbook
// (none is on its $PATH). The same holds for a data dir whose socket
// path is longer than a socket address takes.
func TestHookSock_Delivers(t *testing.T) {
	t.Parallel()
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 130), "data")
	for _, data := range []string{filepath.Join(t.TempDir(), "data"), long} {
		b, _ := serveAt(t, data)
		st, err := os.Lstat(filepath.Join(data, hooksock.Name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Type() != fs.ModeSocket || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want a socket, 0600", filepath.Join(data, hooksock.Name), st.Mode())
		}
		bin := hookBin(t)
		if code, stderr := runSockHook(t, bin, data, sockPrompt(1)); code != 0 || stderr != "" {
			t.Fatalf("data dir of %d bytes: logbook-hook exit %d: %s", len(data), code, stderr)
		}
		if left := spooled(t, data); len(left) > 0 {
			t.Errorf("data dir of %d bytes: spooled %v, want delivered", len(data), left)
		}
		if got := prompts(t, b); !slices.Equal(got, []string{"p-01"}) {
			t.Errorf("data dir of %d bytes: prompts %v, want [p-01]", len(data), got)
		}
	}
}

// TestHookSock_MaxRequest: the socket takes the hook requests the NATS
// API takes (the embedded server's maximum payload) and answers a larger
// one too_large, after reading it all.
func TestHookSock_MaxRequest(t *testing.T) {
	t.Parallel()
	data, b, _ := apiServe(t)
	if got := b.nc.MaxPayload(); got != hooksock.MaxRequest {
		t.Errorf("NATS maximum payload %d, hooksock.MaxRequest %d: want them equal", got, hooksock.MaxRequest)
	}
	req := bytes.Repeat([]byte(" "), hooksock.MaxRequest+1)
	got, err := hooksock.Call(data, req, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var r api.Reply
	if err := json.Unmarshal(got, &r); err != nil || r.Code != "too_large" || !strings.Contains(r.Error, fmt.Sprint(hooksock.MaxRequest)) {
		t.Errorf("answer %s (%v), want a too_large error naming the limit", got, err)
	}
}

// TestHookSock_NoHalfClose: a connection whose request never ends holds
// its slot until api.SocketReadTimeout, then is answered malformed and
// closed; meanwhile hooks are answered at once.
func TestHookSock_NoHalfClose(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	data, b, _ := apiServe(t)
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: filepath.Join(data, hooksock.Name), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.Write([]byte(`{"id":`)); err != nil {
		t.Fatal(err)
	}
	bin := hookBin(t)
	if code, stderr := runSockHook(t, bin, data, sockPrompt(1)); code != 0 || stderr != "" {
		t.Fatalf("logbook-hook exit %d: %s", code, stderr)
	}
	if left := spooled(t, data); len(left) > 0 {
		t.Errorf("spooled %v beside a stuck connection, want delivered", left)
	}
	if got := prompts(t, b); !slices.Equal(got, []string{"p-01"}) {
		t.Errorf("prompts %v, want [p-01]", got)
	}
	c.SetReadDeadline(time.Now().Add(api.SocketReadTimeout + 30*time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	var r api.Reply
	if err := json.Unmarshal(got, &r); err != nil || r.Code != "malformed" || !strings.Contains(r.Error, "did not end within") {
		t.Errorf("answer %s (%v), want a malformed error saying the request did not end", got, err)
	}
	if took < api.SocketReadTimeout-100*time.Millisecond {
		t.Errorf("cut off after %v, before api.SocketReadTimeout (%v)", took, api.SocketReadTimeout)
	}
}

// TestHookSock_Concurrent: 50 logbook-hook processes at once each land
// their payload exactly once, delivered or, when the socket kept one
// waiting past its time, spooled and then delivered by serve.
func TestHookSock_Concurrent(t *testing.T) {
	t.Parallel()
	data, b, _ := apiServe(t)
	bin := hookBin(t)
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if code, stderr := runSockHook(t, bin, data, sockPrompt(i)); code != 0 {
				t.Errorf("hook %d: exit %d: %s", i, code, stderr)
			}
		})
	}
	wg.Wait()
	for deadline := time.Now().Add(30 * time.Second); len(spooled(t, data)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries still spooled after 30s", len(spooled(t, data)))
		}
	}
	// Each hook acknowledged is in serve's journal, appended just after
	// its answer; serve's status waits for those appends only so long
	// (api.IntakeWait), which a loaded machine can outlast: the log is
	// read until it holds n prompts, or for 60 s.
	var got []string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if got = prompts(t, b); len(got) >= n || time.Now().After(deadline) {
			break
		}
	}
	slices.Sort(got)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("p-%02d", i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("prompts %v, want each of p-00…p-%02d once", got, n-1)
	}
}

// TestHookSock_OtherUser: a process of another user (uid 65534) is
// refused with an answer naming the rule, even when the file modes let
// it reach the socket; nothing it sent lands. Run as root only.
func TestHookSock_OtherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	t.Parallel()
	data, b, _ := apiServe(t)
	// Open the way to the socket, which serve keeps to its own user.
	for d := data; d != "/" && d != filepath.Dir(d); d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chmod(filepath.Join(data, hooksock.Name), 0o666); err != nil {
		t.Fatal(err)
	}
	// This test binary, where that user may run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(data, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	call := filepath.Join(bin, "hooksockcall")
	if err := copyExecutable(self, call); err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(api.HookRequest{ID: ulid.Make().String(), Text: sockPrompt(1)})
	var stdout, stderr bytes.Buffer
	c := exec.Command(call, data)
	c.Env = []string{"PATH=" + bin}
	c.Stdin, c.Stdout, c.Stderr = bytes.NewReader(req), &stdout, &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := c.Run(); err != nil {
		t.Fatalf("hooksockcall as uid 65534: %v\n%s", err, stderr.String())
	}
	var r api.Reply
	want := "the hook socket answers only its server's user (uid 0) and root, not uid 65534"
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || !strings.Contains(r.Error, want) {
		t.Errorf("answer %s (%v), want an error saying %q", stdout.Bytes(), err, want)
	}
	if got := prompts(t, b); len(got) > 0 {
		t.Errorf("prompts %v landed from another user, want none", got)
	}
}

// TestHookSock_Markup: a payload at the hook's cap (hookspool.MaxHookSend)
// made of markup goes to serve as it is, by logbook-hook over the socket:
// its <, > and & are not escaped six bytes each (\u003c) on the way, which
// would take the request past hooksock.MaxRequest and the payload aside.
func TestHookSock_Markup(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	b, _ := serveAt(t, data)
	bin := hookBin(t)
	markup := strings.Repeat("<&>", (hookspool.MaxHookSend-300)/3)
	payload := fmt.Sprintf(`{"session_id":%q,"hook_event_name":"UserPromptSubmit","prompt_id":"p-01","prompt":%q}`, sockSession, markup)
	if len(payload) > hookspool.MaxHookSend || 6*len(markup) <= hooksock.MaxRequest {
		t.Fatalf("payload of %d bytes: want one at the cap whose escaped markup passes the socket's limit", len(payload))
	}
	if code, stderr := runSockHook(t, bin, data, payload); code != 0 || stderr != "" {
		t.Fatalf("logbook-hook exit %d: %s", code, stderr)
	}
	if left := spooled(t, data); len(left) > 0 {
		t.Errorf("spooled %v, want delivered", left)
	}
	if got := prompts(t, b); !slices.Equal(got, []string{"p-01"}) {
		t.Errorf("prompts %v, want [p-01]", got)
	}
}

// TestHookSock_OverCap: logbook-hook links no hash, so a payload over
// the send cap is checked, then spooled as it came, not cut; serve's
// drain cuts it as `logbook hook claude` would: it lands once, its
// observation naming the original's size and SHA-256.
func TestHookSock_OverCap(t *testing.T) {
	t.Parallel()
	data, b, _ := apiServe(t)
	bin := hookBin(t)
	payload := fmt.Sprintf(`{"session_id":%q,"hook_event_name":"UserPromptSubmit","prompt_id":"p-big","prompt":%q}`, sockSession, strings.Repeat("long prompt ", 40<<10))
	if len(payload) <= hookspool.MaxHookSend {
		t.Fatalf("payload of %d bytes is not over the cap", len(payload))
	}
	if code, stderr := runSockHook(t, bin, data, payload); code != 0 || stderr != "" {
		t.Fatalf("logbook-hook exit %d: %s", code, stderr)
	}
	for deadline := time.Now().Add(30 * time.Second); len(spooled(t, data)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still spooled after 30s: %v", spooled(t, data))
		}
	}
	b.settle(t.Context())
	sum := sha256.Sum256([]byte(payload))
	var cuts []string
	for _, o := range observations(t, t.Context(), b, sockSession) {
		if o.Cut != nil {
			cuts = append(cuts, fmt.Sprintf("%d %s", o.Cut.Size, o.Cut.SHA256))
		}
	}
	if want := fmt.Sprintf("%d %x", len(payload), sum); !slices.Equal(cuts, []string{want}) {
		t.Errorf("cut observations %v, want one: %s", cuts, want)
	}
}

// TestHookSock_OverCapRefused: a payload over the send cap that serve
// would refuse once cut (a call's input of many small strings, which a
// cut never drops, still over the cap; a call id a redaction rule
// matches) is refused by logbook-hook before it exits, as `logbook hook
// claude` refuses it: exit 1 with the same reason, kept aside in
// rejected/, nothing left in the spool or the journal for serve to
// refuse after the hook said it had the payload. Real processes (with
// logbook beside logbook-hook, to cut what it cannot) against a real
// server.
func TestHookSock_OverCapRefused(t *testing.T) {
	t.Parallel()
	data, b, serveLog := apiServe(t)
	dir := installHookAs(t, "logbook-hook", "logbook")
	start := fmt.Sprintf(`{"session_id":%q,"cwd":"/tmp","hook_event_name":"SessionStart","source":"startup"}`, sockSession)
	if _, stderr, code := runHook(t, data, filepath.Join(dir, "logbook-hook"), start, "claude"); code != 0 {
		t.Fatalf("SessionStart: logbook-hook exit %d: %s", code, stderr)
	}
	var edits strings.Builder
	for i := range 30000 {
		if i > 0 {
			edits.WriteByte(',')
		}
		fmt.Fprintf(&edits, `{"old_string":"a%d","new_string":"b"}`, i)
	}
	aws := "AK" + "IA" + "QWERTYUIOPASDFGH"
	cases := []struct{ name, why, payload string }{
		{"input of many small strings", "payload too large",
			fmt.Sprintf(`{"session_id":%q,"cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"MultiEdit","tool_use_id":"big-%%s","tool_input":{"file_path":"/tmp/f","edits":[%s]}}`, sockSession, edits.String())},
		{"call id a rule matches", "looks like a secret",
			fmt.Sprintf(`{"session_id":%q,"cwd":"/tmp","hook_event_name":"PostToolUse","tool_name":"Read","tool_use_id":"%%s-%s","tool_input":{"file_path":"/tmp/f"},"tool_response":%q}`, sockSession, aws, strings.Repeat("x", 300<<10))},
	}
	for _, c := range cases {
		for _, bin := range []struct {
			name string
			args []string
		}{
			{"logbook-hook", []string{"claude"}},
			{"logbook", []string{"hook", "claude"}},
		} {
			payload := fmt.Sprintf(c.payload, bin.name)
			if len(payload) <= hookspool.MaxHookSend {
				t.Fatalf("%s: %d bytes, not over the send cap", c.name, len(payload))
			}
			_, stderr, code := runHook(t, data, filepath.Join(dir, bin.name), payload, bin.args...)
			if code != 1 || !strings.Contains(stderr, c.why) || !strings.Contains(stderr, "kept aside as "+filepath.Join(data, "spool", "rejected")) {
				t.Errorf("%s, %s: exit %d, stderr %q; want 1, %q, kept aside", c.name, bin.name, code, stderr, c.why)
			}
			if strings.Contains(stderr, aws) {
				t.Errorf("%s, %s: stderr quotes the call id: %s", c.name, bin.name, stderr)
			}
		}
	}
	// Nothing waits to be refused: the spool is empty, rejected/ holds
	// what the hooks refused, and the log holds the session's start alone.
	if left := spooled(t, data); len(left) > 0 {
		t.Errorf("spooled %v, want nothing", left)
	}
	kept, _ := filepath.Glob(filepath.Join(data, "spool", "rejected", "*.json"))
	if len(kept) != 2*len(cases) {
		t.Errorf("rejected/ holds %d payloads, want %d", len(kept), 2*len(cases))
	}
	b.settle(t.Context())
	if obs := observations(t, t.Context(), b, sockSession); len(obs) != 1 || obs[0].Kind != "SessionStart" {
		var kinds []string
		for _, o := range obs {
			kinds = append(kinds, o.Kind)
		}
		t.Errorf("observed %v, want the SessionStart alone", kinds)
	}
	if strings.Contains(serveLog.String(), "refused, not recorded") {
		t.Errorf("serve refused a hook after it was taken:\n%s", serveLog.String())
	}
}
