package term

import (
	"bytes"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestArgvReadsBackInBash: what Argv shows, given to bash, is the same
// words again, for argvs that look alike when joined by spaces (a space
// in a word, a newline against a backslash and an n, an escape sequence
// against its text), for words an interactive bash's history expansion
// would rewrite ('!', a leading '^'), and for random ones over an
// alphabet of quotes, blanks, controls, shell syntax, non-UTF-8 bytes and
// bidirectional marks; pasted into an interactive bash (history
// expansion on) as well as run by bash -c; and the line holds no control
// character.
func TestArgvReadsBackInBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on PATH")
	}
	argvs := [][]string{
		{"a b"}, {"a", "b"},
		{"a\nb"}, {`a\nb`}, {`$'a\nb'`},
		{"\x1b[31m"}, {`\x1b[31m`},
		{"it's", `"q"`, ""}, {"-x", "--", "*", "~", "$HOME", "`id`", "a;b", "a|b", "!"},
		{"x\u202ey", "\xff\xfe", "日本語", "\t", " "},
		{"!bang", "a!ls", "it's!x", "!!", "x\n!y", "^a^b", "!$"}, {"^x"},
	}
	home := t.TempDir()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	alphabet := []string{"a", "Z", "0", " ", "\t", "\n", "\r", "\x1b", "\x7f", "'", `"`, `\`, "$", "`", "!", "^", "*", "?", "[", "~", "#", ";", "&", "|", "(", "{", "}", "=", "%", "-", "\xff", "\xc3", "é", "\u202e", "\u200b", "語"}
	for range 200 {
		argv := make([]string, 1+r.IntN(4))
		for i := range argv {
			var b strings.Builder
			for range r.IntN(8) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			argv[i] = b.String()
		}
		argvs = append(argvs, argv)
	}
	for _, argv := range argvs {
		line := Argv(argv)
		for _, c := range []byte(line) {
			if c < 0x20 || c == 0x7f {
				t.Errorf("Argv(%q) = %q: holds control byte %#x", argv, line, c)
			}
		}
		// printf prints each word bash read, NUL-terminated; the second
		// run is a person pasting the line at an interactive prompt.
		c := exec.Command(bash, "-c", `printf '%s\0' `+line)
		c.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
		out, err := c.Output()
		if err != nil {
			t.Fatalf("bash on Argv(%q) = %q: %v", argv, line, err)
		}
		got := strings.Split(string(bytes.TrimSuffix(out, []byte{0})), "\x00")
		if diff := cmp.Diff(argv, got); diff != "" {
			t.Errorf("bash reads Argv(%q) = %s back otherwise (-want +got):\n%s", argv, line, diff)
		}
		if r.IntN(4) != 0 && len(argvs) > 10 {
			continue // an interactive bash for a quarter of the random ones
		}
		sh := exec.Command(bash, "--norc", "--noprofile", "-i")
		sh.Env = []string{"HOME=" + home, "HISTFILE=/dev/null", "PATH=/usr/bin:/bin", "TERM=dumb", "LANG=C.UTF-8"} // $'\u…' is read in a UTF-8 locale
		sh.Stdin = strings.NewReader(`printf '%s\0' ` + line + "\n")
		var stderr bytes.Buffer
		sh.Stderr = &stderr
		out, err = sh.Output()
		if err != nil {
			t.Fatalf("interactive bash on Argv(%q) = %q: %v\n%s", argv, line, err, stderr.String())
		}
		got = strings.Split(string(bytes.TrimSuffix(out, []byte{0})), "\x00")
		if diff := cmp.Diff(argv, got); diff != "" {
			t.Errorf("an interactive bash reads Argv(%q) = %s back otherwise (-want +got):\n%s\n%s", argv, line, diff, stderr.String())
		}
	}
}
