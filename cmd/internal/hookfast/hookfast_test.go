package hookfast

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/events"
)

// TestNoSubcommand: arguments of flags alone (a flag's value included)
// name no subcommand; a word, help or "--" does.
func TestNoSubcommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--data", "claude"}, true},
		{[]string{"--data=/d", "--gate"}, true},
		{[]string{"claude"}, false},
		{[]string{"--data", "/d", "codex"}, false},
		{[]string{"--help"}, false},
		{[]string{"-h"}, false},
	} {
		if got := NoSubcommand(c.args); got != c.want {
			t.Errorf("NoSubcommand(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestMain_NoSubcommand: a payload piped in with no subcommand is a
// usage mistake (1, never 2) saying it was not delivered, before anything is read
// or run.
func TestMain_NoSubcommand(t *testing.T) {
	var stderr bytes.Buffer
	code := Main(nil, strings.NewReader(`{"session_id":"s","hook_event_name":"Stop"}`), &stderr, "/nonexistent/logbook")
	if code != 1 || !strings.Contains(stderr.String(), "the payload on stdin was not delivered") || !strings.Contains(stderr.String(), "claude") || !strings.Contains(stderr.String(), "codex") {
		t.Errorf("exit %d, %q", code, stderr.String())
	}
}

// TestMain_UnknownAgent: a subcommand that names no agent
// (`logbook-hook hook claude`) is said as this program's mistake, the
// payload not delivered (1, never 2), not handed over for logbook to
// name its own nested command.
func TestMain_UnknownAgent(t *testing.T) {
	for _, c := range []struct {
		args []string
		word string
	}{{[]string{"hook", "claude"}, "hook"}, {[]string{"--data", "/d", "gemini"}, "gemini"}, {[]string{"--budget", "5s", "--gate", "x"}, "x"}} {
		var stderr bytes.Buffer
		code := Main(c.args, strings.NewReader(`{"session_id":"s","hook_event_name":"Stop"}`), &stderr, "/nonexistent/logbook")
		if code != 1 || !strings.Contains(stderr.String(), fmt.Sprintf("unknown agent %q", c.word)) || !strings.Contains(stderr.String(), "not delivered") {
			t.Errorf("%q: exit %d, %q", c.args, code, stderr.String())
		}
	}
}

// TestElideQuoted: every well-formed Go-quoted span is elided, escapes
// and all; a lone quote is kept.
func TestElideQuoted(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`field "session_id": bad id "ab\"c"`, `field "…": bad id "…"`},
		{`no quotes`, `no quotes`},
		{`a lone " quote`, `a lone " quote`},
		{`"x" and "y\n"`, `"…" and "…"`},
	} {
		if got := elideQuoted(c.in); got != c.want {
			t.Errorf("elideQuoted(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestMain_RefusedNoLogbook: with no logbook to hand it to, a refused
// payload (one over the send cap whose cut does not fit among them) is kept in the spool as a pending entry, as it came, for serve
// to set aside; exit 1; the refusal printed names no part of the payload,
// so a secret in it never reaches stderr.
func TestMain_RefusedNoLogbook(t *testing.T) {
	const secret = "ghp_" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	for _, payload := range []string{
		`{"session_id":"s","hook_event_name":"Stop","` + secret + `":1,"` + secret + `":2}`,
		`{"session_id":"s/` + secret + `","hook_event_name":"Stop"}`,
		`{"session_id":"s","hook_event_name":"Stop","tool_use_id":"` + secret + strings.Repeat("x", 300) + `"}`,
		// Over the send cap, and still over once cut: a call's input,
		// never dropped, of many small strings.
		`{"session_id":"s","hook_event_name":"PreToolUse","tool_use_id":"t","tool_input":{"` + secret + `":[` + strings.Repeat(`"a",`, 100000) + `"a"]}}`,
	} {
		data := t.TempDir()
		var stderr bytes.Buffer
		code := Main([]string{"--data", data, "claude"}, strings.NewReader(payload), &stderr, "/nonexistent/logbook")
		if code != 1 {
			t.Errorf("%.200s: exit %d, want 1", payload, code)
		}
		if strings.Contains(stderr.String(), secret[:8]) {
			t.Errorf("stderr quotes the payload: %s", stderr.String())
		}
		if !strings.Contains(stderr.String(), "refused; kept in the spool as") || !strings.Contains(stderr.String(), "logbook serve") {
			t.Errorf("stderr %s", stderr.String())
		}
		sp, err := hookspool.Open(filepath.Join(data, "spool"))
		if err != nil {
			t.Fatal(err)
		}
		pending, err := sp.Pending()
		if err != nil || len(pending) != 1 || string(pending[0].Payload) != payload {
			t.Errorf("spool holds %d entries (%v), want the payload as it came", len(pending), err)
		}
	}
}

// TestMain_DataDirOfAnotherUser: as root, a data dir that belongs to
// another user (uid 65534) is refused as logbook refuses it, before
// anything is created in it: the hook exits 1 naming the dir, its owner
// and our uid, and spools nothing; a payload refused with no logbook to
// hand it to is not kept either; a gated call is still answered deny.
func TestMain_DataDirOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can give a directory to another user")
	}
	data := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	want := "data dir " + data + " belongs to uid 65534, not you (uid 0): run as its owner, or use a data dir of your own (--data)"
	for _, c := range []struct {
		name, payload string
		args          []string
		code          int
		says          string
	}{
		{"spooled", `{"session_id":"s","hook_event_name":"Stop"}`, []string{"--data", data, "claude"}, 1, "logbook-hook: open spool: " + want},
		{"refused", `{"hook_event_name":"Stop"}`, []string{"--data", data, "claude"}, 1, "not kept: open spool: " + want},
		{"gated", `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t1"}`, []string{"--data", data, "claude", "--gate"}, 0, "the call is not recorded: open spool: " + want},
	} {
		var stderr bytes.Buffer
		code := Main(c.args, strings.NewReader(c.payload), &stderr, "/nonexistent/logbook")
		if code != c.code || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", c.name, code, stderr.String(), c.code, c.says)
		}
		if c.name == "gated" && !strings.Contains(stderr.String(), "logbook-hook --gate: deny:") {
			t.Errorf("%s: no deny: %q", c.name, stderr.String())
		}
		ents, err := os.ReadDir(data)
		if err != nil || len(ents) > 0 {
			t.Fatalf("%s: the data dir holds %d entries (%v), want none", c.name, len(ents), err)
		}
	}
}

// TestHookRequest_JSON: appendJSON writes what encoding/json (through
// hooksock.Marshal) writes for the request as the hook sent it before,
// byte for byte: with and without a process, text or comm, with text
// that needs escaping, and with every field of events.Process set, so
// that a field added to it fails here until appendJSON writes it.
func TestHookRequest_JSON(t *testing.T) {
	type sent struct { // the request as encoding/json encoded it
		ID      string `json:"id"`
		Text    string `json:"text,omitempty"`
		Process any    `json:"process,omitempty"`
	}
	// fill sets every field of the struct v to a value that is hard to
	// encode; a slice of structs gets two filled elements and an empty
	// one.
	var fill func(v reflect.Value, at string)
	fill = func(v reflect.Value, at string) {
		for i := range v.NumField() {
			switch f := v.Field(i); f.Kind() {
			case reflect.String:
				f.SetString("v" + strconv.Itoa(i) + "\u2028<&>\"\\\x01é\xff")
			case reflect.Int:
				f.SetInt(-1 << 62)
			case reflect.Uint64:
				f.SetUint(1<<64 - 1 - uint64(i))
			case reflect.Slice:
				if f.Type().Elem().Kind() != reflect.Struct {
					t.Fatalf("%s.%s is a %s, which appendJSON does not write", at, v.Type().Field(i).Name, f.Type())
				}
				f.Set(reflect.MakeSlice(f.Type(), 3, 3))
				fill(f.Index(0), at+"."+v.Type().Field(i).Name)
				fill(f.Index(2), at+"."+v.Type().Field(i).Name)
			default:
				t.Fatalf("%s.%s is a %s, which appendJSON does not write", at, v.Type().Field(i).Name, f.Kind())
			}
		}
	}
	var full events.Process
	fill(reflect.ValueOf(&full).Elem(), "events.Process")
	noComm := events.Process{PID: 4242, Start: 77, Host: "build-3", Boot: "3f2a-…"}
	text := `{"session_id":"s","hook_event_name":"PreToolUse","tool_input":{"command":"echo \"<a>\" && cat\tx\n"}}`
	for _, r := range []hookRequest{
		{ID: "01JDQ0000000000000000000AA"},
		{ID: "01JDQ0000000000000000000AA", Text: text},
		{ID: "01JDQ0000000000000000000AA", Text: text, Process: &noComm},
		{ID: "01JDQ0000000000000000000AA", Text: "x", Process: &full},
		{ID: "", Process: &events.Process{}},
	} {
		want, err := hooksock.Marshal(sent{ID: r.ID, Text: r.Text, Process: r.Process})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.appendJSON([]byte("x"))[1:]; !bytes.Equal(got, want) {
			t.Errorf("appendJSON =\n%s\nwant\n%s", got, want)
		}
	}
}

// TestParseArgs: the fast path takes "claude" with at most one --data,
// before or after it, in either spelling; anything else is handed over.
func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		data string
		sock string
		ok   bool
	}{
		{[]string{"claude"}, "", "", true},
		{[]string{"--data", "/d", "claude"}, "/d", "", true},
		{[]string{"--data=/d", "claude"}, "/d", "", true},
		{[]string{"claude", "--data", "/d"}, "/d", "", true},
		{[]string{"claude", "--data=/d"}, "/d", "", true},
		{[]string{"claude", "--data"}, "", "", false},
		{[]string{"claude", "claude"}, "", "", false},
		{[]string{"--data", "/d", "--data", "/e", "claude"}, "", "", false},
		{[]string{"claude", "--gate"}, "", "", false},
		{[]string{"codex"}, "", "", false},
		{nil, "", "", false},
		{[]string{"--socket", "/s", "claude"}, "", "/s", true},
		{[]string{"claude", "--socket=/s"}, "", "/s", true},
		{[]string{"--socket", "/s", "--data", "/d", "claude"}, "", "", false},
		{[]string{"claude", "--socket"}, "", "", false},
	} {
		data, sock, ok := parseArgs(c.args)
		if data != c.data || sock != c.sock || ok != c.ok {
			t.Errorf("parseArgs(%q) = %q, %q, %v; want %q, %q, %v", c.args, data, sock, ok, c.data, c.sock, c.ok)
		}
	}
}

// TestViaSystem_NoAnswerSaysUnknown: a system socket that takes the hook
// and never answers leaves the hook exit 1 saying it is unknown whether
// serve kept it, never that it may not be kept (serve may have journaled
// it), and sends nothing again.
func TestViaSystem_NoAnswerSaysUnknown(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, systemSocketName)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			defer c.Close()
		}
	}()
	var stderr bytes.Buffer
	p := []byte(`{"session_id":"s1","transcript_path":"/tmp/x.jsonl","cwd":"/tmp","hook_event_name":"Stop"}`)
	code := viaSystem([]string{"claude"}, p, &stderr, filepath.Join(dir, "no-logbook"), dir)
	msg := stderr.String()
	if code != 1 || strings.Contains(msg, "may not be kept") || !strings.Contains(msg, "unknown") {
		t.Errorf("exit %d, %q: want 1 and a message that whether it was kept is unknown", code, msg)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1 (nothing sent again)", n)
	}
}

// TestMain_HeldSaysWhy: a serve that answers that it holds its appends
// for want of disk space (code appends_held) has the payload kept in the
// spool, exit 0, and the hook says serve's reason and that it goes in
// once the disk frees, as `logbook hook claude` says it.
func TestMain_HeldSaysWhy(t *testing.T) {
	data := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(data, hooksock.Name))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const why = "serve holds appends: the disk under the log's store is short of its reserve of free space (3 bytes free under /d/jetstream, under the log's reserve of 16 MiB)"
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1<<16)
			for {
				if _, err := c.Read(buf); err != nil {
					break
				}
			}
			fmt.Fprintf(c, `{"error":%q,"code":%q}`, why, hooksock.CodeHeld)
			c.Close()
		}
	}()
	var stderr bytes.Buffer
	p := `{"session_id":"s1","transcript_path":"/tmp/x.jsonl","cwd":"/tmp","hook_event_name":"Stop"}`
	code := Main([]string{"--data", data, "claude"}, strings.NewReader(p), &stderr, "/nonexistent/logbook")
	if want := "logbook hook: kept in spool: " + why + "; " + hooksock.HeldKept + "\n"; code != 0 || stderr.String() != want {
		t.Errorf("exit %d, %q\nwant exit 0, %q", code, stderr.String(), want)
	}
	sp, err := hookspool.Open(filepath.Join(data, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	if pending, err := sp.Pending(); err != nil || len(pending) != 1 {
		t.Errorf("spool holds %d entries (%v), want the payload", len(pending), err)
	}
}

// TestMain_NamesStayOnTheirLine: a --data naming a directory that does
// not exist, with a newline, an escape and a bidirectional override in
// its name: the hook is kept in the spool made there, and each thing
// logbook-hook says of it is one line, those characters shown escaped,
// so that no line of its own starts with the name's words.
func TestMain_NamesStayOnTheirLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "evil\nlevel=ERROR msg=forged\x1b[2J\u202e")
	var stderr bytes.Buffer
	code := Main([]string{"--data", dir, "claude"}, strings.NewReader(`{"session_id":"s1","hook_event_name":"Stop"}`), &stderr, "/nonexistent/logbook")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("said %d lines, want 2 (the data dir made, the hook kept):\n%s", len(lines), stderr.String())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "logbook-hook: ") && !strings.HasPrefix(l, "logbook hook: ") || strings.ContainsAny(l, "\x1b\u202e") ||
			!strings.Contains(l, `evil\nlevel=ERROR msg=forged\x1b[2J\u202e`) {
			t.Errorf("line %q: want the name on it, escaped", l)
		}
	}
	if ents, err := os.ReadDir(filepath.Join(dir, "spool")); err != nil || len(ents) == 0 {
		t.Errorf("the spool there: %v entries, %v; want the hook kept", len(ents), err)
	}
}

// TestLineWriter: what a line holds that could end it or rewrite it is
// shown escaped; its own newline, and every printable character, stay.
func TestLineWriter(t *testing.T) {
	var b bytes.Buffer
	fmt.Fprintf(lineWriter{&b}, "a\tb\r\nc\x7f\u2028ü\xff\u061c 漢\n")
	if got, want := b.String(), `a\tb\r\nc\x7f\u2028ü\xff\u061c 漢`+"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
