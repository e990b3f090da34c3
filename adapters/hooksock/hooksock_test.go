package hooksock_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/hooksock"
)

// dirs returns a data dir of a short path and one whose socket path is
// longer than a socket address takes (108 bytes).
func dirs(t *testing.T) []string {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	return []string{t.TempDir(), long}
}

// serve listens on the socket in dir and answers each connection with
// answer(request) until the test ends.
func serve(t *testing.T, dir string, answer func(req []byte) []byte) *api.Socket {
	t.Helper()
	s, err := api.ListenSocket(filepath.Join(dir, hooksock.Name))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { s.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := s.AcceptUnix()
			if err != nil {
				return
			}
			req, _ := io.ReadAll(c)
			c.Write(answer(req))
			c.Close()
		}
	}()
	return s
}

// TestCall: a request reaches the server whole, after the client shut
// down its writing half, and its answer comes back whole, whatever the
// length of the data dir's path.
func TestCall(t *testing.T) {
	for _, dir := range dirs(t) {
		sum := func(b []byte) []byte { return fmt.Appendf(nil, "%d %x", len(b), sha256.Sum256(b)) }
		serve(t, dir, sum)
		req := bytes.Repeat([]byte("x"), 300<<10)
		got, err := hooksock.Call(dir, req, time.Now().Add(10*time.Second))
		if err != nil {
			t.Fatalf("dir of %d bytes: %v", len(dir), err)
		}
		if want := sum(req); !bytes.Equal(got, want) {
			t.Errorf("dir of %d bytes: answer %q, want %q", len(dir), got, want)
		}
	}
}

// TestCall_Errors: each failure is told apart with errors.Is and names
// the socket's path.
func TestCall_Errors(t *testing.T) {
	for _, dir := range dirs(t) {
		path := filepath.Join(dir, hooksock.Name)
		check := func(what string, err, want error) {
			t.Helper()
			if !errors.Is(err, want) || !strings.Contains(err.Error(), path) {
				t.Errorf("dir of %d bytes, %s: error %v, want one wrapping %v naming %s", len(dir), what, err, want, path)
			}
		}
		_, err := hooksock.Call(filepath.Join(dir, "missing"), []byte("{}"), time.Now().Add(5*time.Second))
		if !errors.Is(err, hooksock.ErrNoSocket) {
			t.Errorf("no data dir: error %v, want ErrNoSocket", err)
		}
		_, err = hooksock.Call(dir, []byte("{}"), time.Now().Add(5*time.Second))
		check("no socket", err, hooksock.ErrNoSocket)

		// A socket whose server is gone: the file stays, nothing listens.
		s, err := api.ListenSocket(path)
		if err != nil {
			t.Fatal(err)
		}
		s.UnixListener.Close()
		_, err = hooksock.Call(dir, []byte("{}"), time.Now().Add(5*time.Second))
		check("stale socket", err, hooksock.ErrRefused)
		s.Close()

		// A server that never answers.
		s, err = api.ListenSocket(path)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = hooksock.Call(dir, []byte("{}"), time.Now().Add(300*time.Millisecond))
		check("no answer", err, hooksock.ErrTimeout)
		if took := time.Since(start); took < 250*time.Millisecond || took > 5*time.Second {
			t.Errorf("no answer: gave up after %v, want 300ms", took)
		}
		s.Close()
	}
}

// TestCall_MaxReply: an answer over MaxReply bytes is an error, not read
// on.
func TestCall_MaxReply(t *testing.T) {
	dir := t.TempDir()
	serve(t, dir, func([]byte) []byte { return bytes.Repeat([]byte("y"), hooksock.MaxReply+1) })
	if _, err := hooksock.Call(dir, []byte("{}"), time.Now().Add(10*time.Second)); err == nil || !strings.Contains(err.Error(), "answer over") {
		t.Errorf("error %v, want the answer over MaxReply refused", err)
	}
}

// hookRequest is the shape of api.HookRequest's id and text.
type hookRequest struct {
	ID   string `json:"id"`
	Text string `json:"text,omitempty"`
}

// TestMarshal: a request's markup is not escaped (\u003c, six bytes
// for one), so a hook payload at its cap stays within the server's
// maximum payload; the result is still what json.Marshal decodes to.
func TestMarshal(t *testing.T) {
	req := hookRequest{ID: "01JDQ0000000000000000000000", Text: `{"prompt":"<a href=\"x\">&amp;</a>"}`}
	b, err := hooksock.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"01JDQ0000000000000000000000","text":"{\"prompt\":\"<a href=\\\"x\\\">&amp;</a>\"}"}`; string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
	var back hookRequest
	if err := json.Unmarshal(b, &back); err != nil || back.Text != req.Text || back.ID != req.ID {
		t.Errorf("decoded %+v (%v), want %+v", back, err, req)
	}
}

// TestAppendString: AppendString writes every string as Marshal does,
// byte for byte: each byte value alone and in text, U+2028 and U+2029,
// invalid UTF-8 (a lone continuation byte, a cut rune, a surrogate's
// encoding), markup, and text after what is escaped.
func TestAppendString(t *testing.T) {
	cases := []string{"", "plain", `<a href="x">&amp;</a>`, "\u2028\u2029 \u2027\u202a", "é日本🎉", "\x80", "\xe6\x97", "\xed\xa0\x80", "a\xffb", "tab\there\nnew\\line\"q\x7f\x00\x1f"}
	for c := range 256 {
		cases = append(cases, string([]byte{byte(c)}), "ab"+string([]byte{byte(c)})+"cd")
	}
	for _, s := range cases {
		want, err := hooksock.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := hooksock.AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got[1:], want)
		}
	}
}

// TestCall_WriteTimeout: a server that takes the connection but never
// reads a request larger than the socket's buffers makes Call give up
// at its deadline, while writing, with ErrTimeout.
func TestCall_WriteTimeout(t *testing.T) {
	dir := t.TempDir()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, hooksock.Name), Net: "unix"})
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
			defer c.Close() // held open, never read
		}
	}()
	start := time.Now()
	_, err = hooksock.Call(dir, make([]byte, 16<<20), time.Now().Add(300*time.Millisecond))
	if !errors.Is(err, hooksock.ErrTimeout) {
		t.Errorf("Call to a server that never reads: %v, want ErrTimeout", err)
	}
	if took := time.Since(start); took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("gave up after %v, want 300ms", took)
	}
}
