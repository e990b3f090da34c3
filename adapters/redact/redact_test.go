package redact_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/redact/redacttest"
)

// TestRules_Compile checks that every rule, gitleaks' included, compiles
// with Go's RE2 regexp package, and that gitleaks' set is there.
func TestRules_Compile(t *testing.T) {
	r, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	names := r.Rules()
	if len(names) < 150 {
		t.Errorf("%d rules, want gitleaks' set (over 150) with the built-ins", len(names))
	}
	for name, err := range r.Check() {
		t.Errorf("rule %s does not compile: %v", name, err)
	}
	t.Logf("%d rules", len(names))
}

// positions returns text placed as it appears in practice: on its own
// line, after a tab, inside a sentence, as a URL query value.
func positions(text string, multi bool) map[string]string {
	p := map[string]string{
		"own_line":  "first line\n" + text + "\nlast line",
		"after_tab": "col1\t" + text + "\tcol3",
		"sentence":  "the value is " + text + " here",
	}
	js, _ := json.Marshal(map[string]string{"content": "x\n" + text + "\ty"})
	p["json_as_text"] = "printed: " + string(js)
	if !multi && !strings.ContainsAny(text, " \n") {
		p["url_query"] = "see https://example.invalid/cb?state=1&code=" + text + "&x=2"
	}
	return p
}

// TestRedact_Shapes: every shape, in every position, as plain text and
// inside a JSON string (where newlines and tabs are escapes), loses its
// secret.
func TestRedact_Shapes(t *testing.T) {
	r := redact.Default()
	shapes := redacttest.Shapes()
	if len(shapes) < 40 {
		t.Fatalf("%d shapes, want at least 40", len(shapes))
	}
	for _, sh := range shapes {
		for pos, text := range positions(sh.Text, sh.MultiLine) {
			if got := r.Redact(text); strings.Contains(got, sh.Secret) {
				t.Errorf("%s %s plain: secret kept in %q", sh.Name, pos, got)
			}
			enc, _ := json.Marshal(map[string]any{"type": "tool_result", "content": text})
			got := r.JSON(string(enc))
			if strings.Contains(got, sh.Secret) {
				t.Errorf("%s %s json: secret kept in %s", sh.Name, pos, got)
			}
			var back map[string]any
			if err := json.Unmarshal([]byte(got), &back); err != nil {
				t.Errorf("%s %s json: result is not JSON: %v", sh.Name, pos, err)
			} else if c, _ := back["content"].(string); strings.Contains(c, sh.Secret) {
				t.Errorf("%s %s json: decoded secret kept", sh.Name, pos)
			}
		}
	}
}

// TestJSON_Exact: a JSON text without secrets comes back byte for byte,
// escapes and spacing included; a changed string is re-encoded
// canonically and the rest kept.
func TestJSON_Exact(t *testing.T) {
	r := redact.Default()
	for _, s := range []string{
		`{"a": "x<y>&z",  "b":[1,2,{"c":"\u00e9\n"}]}`,
		`{"cwd":"/home/u/p","max_tokens":4096,"token_type":"bearer"}`,
		`"just a string"`, `[]`, `{}`,
	} {
		if got := r.JSON(s); got != s {
			t.Errorf("JSON(%s) = %s, want it unchanged", s, got)
		}
	}
	in := `{"x": "<a>", "out": "ok\n` + redactTestAWS() + `\tend", "password" : "p w d"}`
	want := `{"x": "<a>", "out": "ok\n[REDACTED:aws_access_key]\tend", "password" : "[REDACTED:assignment]"}`
	if got := r.JSON(in); got != want {
		t.Errorf("JSON\n got %s\nwant %s", got, want)
	}
	// Not JSON: redacted as text.
	if got := r.JSON(`{"cut": "` + redactTestAWS()); strings.Contains(got, redactTestAWS()) {
		t.Errorf("cut JSON kept the secret: %s", got)
	}
}

func redactTestAWS() string { return "AK" + "IA" + "ABCDEFGHIJKLMNOP" }

// TestStream_Splits: a secret split across two pieces anywhere is still
// redacted, and text without secrets passes byte for byte.
func TestStream_Splits(t *testing.T) {
	r := redact.Default()
	for _, sh := range redacttest.Shapes() {
		text := "before\n" + sh.Text + "\nafter\n"
		for cut := 1; cut < len(text); cut += 1 + len(text)/17 {
			s := r.NewStream()
			out := string(s.Write([]byte(text[:cut]))) + string(s.Write([]byte(text[cut:]))) + string(s.Flush())
			if strings.Contains(out, sh.Secret) {
				t.Errorf("%s cut at %d: secret kept: %q", sh.Name, cut, out)
			}
		}
	}
	s := r.NewStream()
	in := "plain \x00\xff binary\nline two\npartial"
	out := string(s.Write([]byte(in[:10]))) + string(s.Write([]byte(in[10:]))) + string(s.Flush())
	if out != strings.TrimSuffix(in, "partial") {
		t.Errorf("stream changed clean text, or a pause let a trailing word go: %q", out)
	}
	if out += string(s.Close()); out != in {
		t.Errorf("stream changed clean text: %q", out)
	}
}

// TestStream_PauseInsideASecret: a secret written in two pieces with an
// idle flush between them (the worker's, for a pause of the command) is
// redacted: the token-shaped start of the line stays held over the
// pause, and a keyword that went before the pause is redacted with the
// value after it; a prompt ending in a space or punctuation, and a line
// of progress dots, go at the pause.
func TestStream_PauseInsideASecret(t *testing.T) {
	r := redact.Default()
	for _, sh := range redacttest.Shapes() {
		text := "before\n" + sh.Text + "\nafter\n"
		for cut := 1; cut < len(text); cut++ {
			s := r.NewStream()
			out := string(s.Write([]byte(text[:cut]))) + string(s.Flush()) + string(s.Write([]byte(text[cut:]))) + string(s.Close())
			if strings.Contains(out, sh.Secret) {
				t.Errorf("%s paused at %d: secret kept: %q", sh.Name, cut, out)
			}
		}
	}
	for _, c := range []struct{ first, flushed string }{
		{"Password: ", "Password: "},
		{"Continue? [y/N] ", "Continue? [y/N] "},
		{"downloading ....", "downloading ...."},
		{"token ghp_abc", "token "},
	} {
		s := r.NewStream()
		if got := string(s.Write([]byte(c.first))) + string(s.Flush()); got != c.flushed {
			t.Errorf("%q then a pause: %q went, want %q", c.first, got, c.flushed)
		}
	}
}

// TestNew_Lazy: building a Redactor compiles nothing, and redacting a
// short text compiles only the rules its keywords call for.
func TestNew_Custom(t *testing.T) {
	r, err := redact.New([]string{`internal-[0-9]+`, `x*`})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Redact("id internal-42 ok"); got != "id [REDACTED:custom-1] ok" {
		t.Errorf("custom: %q", got)
	}
	if _, err := redact.New([]string{`(`}); err == nil {
		t.Error("bad pattern accepted")
	}
}

func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		if _, err := redact.New(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedact_FirstUse measures a process's first redaction of a
// short text: rule set loading plus the few rules its keywords call for.
func BenchmarkRedact_ColdSmall(b *testing.B) {
	for b.Loop() {
		r, _ := redact.New([]string{"fresh"}) // own rule list, shared compiled rules
		_ = r.Redact("a short line with a token=" + strings.Repeat("x", 5))
	}
}

func BenchmarkRedact_64KiB(b *testing.B) {
	r := redact.Default()
	text := strings.Repeat("an ordinary line of tool output with some words 12345\n", 64<<10/55)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = r.Redact(text)
	}
}

func BenchmarkJSON_64KiB(b *testing.B) {
	r := redact.Default()
	lines := strings.Repeat("an ordinary line of tool output with some words 12345\n", 64<<10/55)
	enc, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"content": []any{map[string]any{"type": "tool_result", "content": lines}}}})
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		_ = r.JSON(string(enc))
	}
}

// TestRedact_Idempotent: redacting redacted text changes nothing, for
// every shape in every position and with a data dir's own rules, so a
// text a client redacted and the server redacts again (reasons typed on
// the command line) is kept as the client sent it.
func TestRedact_Idempotent(t *testing.T) {
	custom, err := redact.New([]string{`project-[a-z]+`})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*redact.Redactor{redact.Default(), custom} {
		for _, sh := range redacttest.Shapes() {
			for pos, text := range positions(sh.Text+" for project-omega", sh.MultiLine) {
				once := r.Redact(text)
				if twice := r.Redact(once); twice != once {
					t.Errorf("%s %s: redacted again\n%q\nbecame\n%q", sh.Name, pos, once, twice)
				}
			}
		}
	}
}

// TestRedact_PathNotKey: a path whose last part ends like a secret key
// ("/etc/passwd") is not an assignment, so a message quoting it keeps its
// words; the assignments around it are redacted still.
func TestRedact_PathNotKey(t *testing.T) {
	r := redact.Default()
	for in, want := range map[string]string{
		`refused: not found: start "/etc/passwd": sandbox: command not found`: `refused: not found: start "/etc/passwd": sandbox: command not found`,
		`open /run/secrets/db_token: permission denied`:                       `open /run/secrets/db_token: permission denied`,
		`DB_PASSWORD=hunter22 "/etc/passwd": sandbox`:                         `DB_PASSWORD=[REDACTED:assignment] "/etc/passwd": sandbox`,
		`"passwd": "hunter22"`:                                                `"passwd": "[REDACTED:assignment]"`,
		`spring.datasource.password=hunter22`:                                 `spring.datasource.password=[REDACTED:assignment]`,
		`--db-password=hunter22`:                                              `--db-password=[REDACTED:assignment]`,
	} {
		if got := r.Redact(in); got != want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// TestRedact_ParamRefNotAssignment: a shell parameter expansion naming a
// secret-named variable, in any of its forms, is a name and no value;
// assignments of values to such variables are redacted still.
func TestRedact_ParamRefNotAssignment(t *testing.T) {
	r := redact.Default()
	for _, in := range []string{
		`echo ${AWS_SECRET_ACCESS_KEY:-unset}`, `echo ${AWS_SECRET_ACCESS_KEY-unset}`, `: ${DB_PASSWORD:=default}`,
		`: ${DB_PASSWORD=default}`, `${API_TOKEN:?set API_TOKEN first}`, `${GITHUB_TOKEN:+present}`, `${#API_TOKEN}`,
		`${!SECRET_KEY}`, `echo "${aws_secret_access_key:-none}"`, `echo $GITHUB_TOKEN`, `${GITHUB_TOKEN}`,
	} {
		if got := r.Redact(in); got != in {
			t.Errorf("Redact(%q) = %q, want it kept", in, got)
		}
	}
	for in, want := range map[string]string{
		`AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`:              `AWS_SECRET_ACCESS_KEY=[REDACTED:assignment]`,
		`echo ${X}; DB_PASSWORD=hunter22`:                                             `echo ${X}; DB_PASSWORD=[REDACTED:assignment]`,
		`$DB_PASSWORD=hunter22`:                                                       `$DB_PASSWORD=[REDACTED:assignment]`,
		`${X} password: hunter22`:                                                     `${X} password: [REDACTED:assignment]`,
		`export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY; make`: `export AWS_SECRET_ACCESS_KEY=[REDACTED:assignment]; make`,
	} {
		if got := r.Redact(in); got != want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}
