package redact

import (
	"bytes"
	"strings"
	"testing"
)

// keyBlocks returns fake private key blocks of every marker kind the
// private_key rule knows, lines ended by nl, without a final line end;
// every line inside holds "SECRETBODY".
func keyBlocks(nl string) map[string]string {
	body := func(lines ...string) string { return strings.Join(lines, nl) }
	b64 := "MIIEowIBAAKCAQEA0SECRETBODY0fY3x9Qm8n2ZpK7tW+4bL1cVdE5rS6uH7iJ8k"
	return map[string]string{
		"rsa":       body("-----BEGIN RSA PRIVATE KEY-----", b64, b64, "=SECRETBODY=", "-----END RSA PRIVATE KEY-----"),
		"pkcs8":     body("-----BEGIN PRIVATE KEY-----", b64, "-----END PRIVATE KEY-----"),
		"ec":        body("-----BEGIN EC PRIVATE KEY-----", b64, "-----END EC PRIVATE KEY-----"),
		"openssh":   body("-----BEGIN OPENSSH PRIVATE KEY-----", b64, b64, "-----END OPENSSH PRIVATE KEY-----"),
		"encrypted": body("-----BEGIN ENCRYPTED PRIVATE KEY-----", b64, "-----END ENCRYPTED PRIVATE KEY-----"),
		"legacy":    body("-----BEGIN RSA PRIVATE KEY-----", "Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,SECRETBODY", "", b64, "-----END RSA PRIVATE KEY-----"),
		"pgp":       body("-----BEGIN PGP PRIVATE KEY BLOCK-----", "Version: SECRETBODY 1", "", b64, "=SECRETBODY", "-----END PGP PRIVATE KEY BLOCK-----"),
	}
}

// feeds are the ways a stream can be cut: write sizes, and whether the
// writer pauses (the caller's idle Flush) after each write.
var feeds = []struct {
	name  string
	size  int // bytes per write; 0: line by line
	flush bool
}{
	{"whole", 1 << 20, false},
	{"lines", 0, false},
	{"slow-lines", 0, true},
	{"bytes", 1, false},
	{"slow-bytes", 1, true},
	{"slow-7", 7, true},
	{"slow-64", 64, true},
}

// feed writes text to s as f cuts it and returns all s let go, closed.
func feed(s *Stream, text string, size int, flush bool) string {
	var out bytes.Buffer
	for len(text) > 0 {
		n := size
		if n == 0 {
			n = strings.IndexByte(text, '\n') + 1
			if n == 0 {
				n = len(text)
			}
		}
		n = min(n, len(text))
		out.Write(s.Write([]byte(text[:n])))
		text = text[n:]
		if flush {
			out.Write(s.Flush())
		}
	}
	out.Write(s.Close())
	return out.String()
}

// TestStream_KeyBlockAnyPace: a private key block of any kind, with LF
// or CRLF line ends, among other text, is replaced by one
// [REDACTED:private_key] however it is cut and however long the pauses
// between its pieces (each pause a Flush, as the worker's idle flush):
// nothing of its inside or its END line gets out, the text around it
// does, byte for byte, and the result is what Redact makes of the whole
// text.
func TestStream_KeyBlockAnyPace(t *testing.T) {
	r := Default()
	for _, nl := range []string{"\n", "\r\n"} {
		for kind, block := range keyBlocks(nl) {
			text := "before" + nl + block + nl + "after" + nl + "prompt> "
			want := "before" + nl + keyRedacted + nl + "after" + nl + "prompt> "
			if got := r.Redact(text); got != want {
				t.Fatalf("%s: Redact of the whole text %q, want %q", kind, got, want)
			}
			for _, f := range feeds {
				got := feed(r.NewStream(), text, f.size, f.flush)
				if got != want {
					t.Errorf("%s %q %s: got %q, want %q", kind, nl, f.name, got, want)
				}
			}
		}
	}
}

// TestStream_SeveralBlocks: blocks one after another, text on the lines
// of their markers, and a secret of another shape after them: each block
// is replaced, the text before BEGIN and after END on their lines kept,
// and the stream redacts by the rules again after each END.
func TestStream_SeveralBlocks(t *testing.T) {
	r := Default()
	blocks := keyBlocks("\n")
	aws := "AK" + "IA" + "ABCDEFGHIJKLMNOP"
	for _, f := range feeds {
		// A token cut by pauses is the documented limit of other shapes.
		other, redacted := "key="+aws, "key=[REDACTED:aws_access_key]"
		if f.flush && f.size > 0 {
			other, redacted = "other", "other"
		}
		text := "a " + blocks["rsa"] + " b\n" + blocks["openssh"] + "\nmid\n" + blocks["pgp"] + "\n" + other + "\n" + blocks["ec"] + "\nend\n"
		want := "a " + keyRedacted + " b\n" + keyRedacted + "\nmid\n" + keyRedacted + "\n" + redacted + "\n" + keyRedacted + "\nend\n"
		if got := feed(r.NewStream(), text, f.size, f.flush); got != want {
			t.Errorf("%s: got %q, want %q", f.name, got, want)
		}
	}
}

// TestStream_KeyBlockNeverEnds: a block whose END never comes hides the
// rest of the stream, after pauses and at Close, and holds at most
// keyTail bytes however much comes: the inside is dropped, not held.
func TestStream_KeyBlockNeverEnds(t *testing.T) {
	r := Default()
	s := r.NewStream()
	var out bytes.Buffer
	out.Write(s.Write([]byte("ok\n-----BEGIN OPENSSH PRIVATE KEY-----\n")))
	out.Write(s.Flush())
	line := []byte(strings.Repeat("SECRETBODY", 7) + "\n")
	for range 200000 { // 14 MB
		out.Write(s.Write(line))
		if s.Held() != 0 || len(s.tail) > keyTail+len(line) {
			t.Fatalf("inside a block: %d held, %d kept for the END marker", s.Held(), len(s.tail))
		}
	}
	out.Write(s.Write([]byte("no end line, no newline")))
	out.Write(s.Flush())
	if !s.InKey() {
		t.Fatal("a Flush closed the block")
	}
	out.Write(s.Close())
	if got, want := out.String(), "ok\n"+keyRedacted; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Close ends the stream: written again, it starts afresh.
	if got := string(s.Write([]byte("next\n"))); got != "next\n" {
		t.Errorf("after Close: %q", got)
	}
}

// TestStream_PartialBeginHeld: a pause (Flush) after a piece of a BEGIN
// marker does not let the piece go, so the marker is seen whole when the
// rest comes; anything else without a newline goes at a pause (a
// prompt), and Close lets a marker's piece go as text.
func TestStream_PartialBeginHeld(t *testing.T) {
	r := Default()
	s := r.NewStream()
	if got := string(s.Write([]byte("Password: "))) + string(s.Flush()); got != "Password: " {
		t.Errorf("prompt: %q", got)
	}
	if got := string(s.Write([]byte("x -----BEGIN RSA PRIV"))) + string(s.Flush()); got != "x " {
		t.Errorf("a marker's piece went at a pause: %q", got)
	}
	if got := string(s.Write([]byte("ATE KEY-----\nSECRETBODY\n"))) + string(s.Flush()); got != keyRedacted {
		t.Errorf("marker cut by a pause: %q", got)
	}
	s = r.NewStream()
	if got := string(s.Write([]byte("a --"))) + string(s.Flush()) + string(s.Close()); got != "a --" {
		t.Errorf("Close: %q", got)
	}
}
