package httpapi

import (
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestPeerUID_RealConnections: for a loopback connection made here over
// IPv4, over IPv6 and from IPv4 to a dual-stack listener, PeerUID finds
// this process's uid from the server's view of it (the accepted
// connection's remote and local addresses), and reports ErrPeerNotFound
// for a client port no socket has.
func TestPeerUID_RealConnections(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the socket tables are Linux's")
	}
	for _, c := range []struct{ name, listen, dial string }{
		{"ipv4", "127.0.0.1:0", "127.0.0.1"},
		{"ipv6", "[::1]:0", "::1"},
		{"ipv4 to dual stack", "[::]:0", "127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := net.Listen("tcp", c.listen)
			if err != nil {
				t.Skipf("listen %s: %v", c.listen, err)
			}
			defer l.Close()
			port := l.Addr().(*net.TCPAddr).Port
			cc, err := net.Dial("tcp", net.JoinHostPort(c.dial, strconv.Itoa(port)))
			if err != nil {
				t.Skipf("dial %s: %v", c.dial, err)
			}
			defer cc.Close()
			sc, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			client, _ := tcpAddrPort(sc.RemoteAddr())
			server, _ := tcpAddrPort(sc.LocalAddr())
			uid, err := PeerUID(client, server)
			if err != nil || uid != uint32(os.Geteuid()) {
				t.Fatalf("PeerUID(%s, %s) = %d, %v; want %d", client, server, uid, err, os.Geteuid())
			}
			gone := netip.AddrPortFrom(client.Addr(), client.Port()^0x5a5a)
			if _, err := PeerUID(gone, server); !errors.Is(err, ErrPeerNotFound) || !strings.Contains(err.Error(), gone.String()) {
				t.Errorf("PeerUID of no socket: %v, want ErrPeerNotFound naming %s", err, gone)
			}
		})
	}
}

// TestFindPeerUID_Rows: rows as the kernel writes them, IPv4 and IPv6,
// are matched by the client's address:port as local and the server's as
// remote; a TIME_WAIT row or one with no inode (its uid reads 0 whoever
// opened it) is passed over; a row that cannot be read is an error
// naming its line.
func TestFindPeerUID_Rows(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the rows below are a little-endian machine's")
	}
	const head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	v4 := head +
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2239837 1 0000000000000000 100 0 0 10 0\n" +
		"   1: 0100007F:D431 0100007F:1F90 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000\n" +
		"   2: 0100007F:D432 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 65534        0 2436612 1 0000000000000000 20 4 30 10 -1\n" +
		"   3: 0100007F:1F90 0100007F:D432 01 00000000:00000000 00:00000000 00000000  1000        0 2436613 1 0000000000000000 20 4 30 10 -1\n"
	v6 := "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 00000000000000000000000001000000:C350 00000000000000000000000001000000:1F90 01 00000000:00000000 00:00000000 00000000  1001        0 91 1 0000000000000000 20 4 30 10 -1\n" +
		"   1: 0000000000000000FFFF00000100007F:C351 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 00:00000000 00000000  1002        0 92 1 0000000000000000 20 4 30 10 -1\n"
	ap := netip.MustParseAddrPort
	for _, c := range []struct {
		name           string
		table          string
		client, server string
		uid            uint32
		err            string
	}{
		{"ipv4 client end", v4, "127.0.0.1:54322", "127.0.0.1:8080", 65534, ""},
		{"ipv4 server end is not the client", v4, "127.0.0.1:8080", "127.0.0.1:54322", 1000, ""},
		{"ipv4 time-wait", v4, "127.0.0.1:54321", "127.0.0.1:8080", 0, "not found"},
		{"ipv4 listener", v4, "127.0.0.1:8080", "0.0.0.0:0", 0, "not found"},
		{"ipv6", v6, "[::1]:50000", "[::1]:8080", 1001, ""},
		{"ipv4-mapped", v6, "127.0.0.1:50001", "[::ffff:127.0.0.1]:8080", 1002, ""},
		{"wrong server", v6, "[::1]:50000", "[::1]:8081", 0, "not found"},
		{"short row", head + "   0: 0100007F:1F90 00000000:0000 0A\n", "127.0.0.1:1", "127.0.0.1:2", 0, "line 2: 4 fields"},
		{"bad address", head + "   0: 0100007G:1F90 00000000:0000 0A 0 0 0 0 0 1\n", "127.0.0.1:1", "127.0.0.1:2", 0, `line 2: local address: "0100007G:1F90"`},
		{"bad uid", head + "   0: 0100007F:0001 0100007F:0002 01 0:0 0:0 0 x 0 1\n", "127.0.0.1:1", "127.0.0.1:2", 0, `line 2: uid "x"`},
	} {
		uid, err := findPeerUID(strings.NewReader(c.table), ap(c.client), ap(c.server))
		switch {
		case c.err == "" && (err != nil || uid != c.uid):
			t.Errorf("%s: %d, %v; want %d", c.name, uid, err, c.uid)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %d, %v; want an error with %q", c.name, uid, err, c.err)
		}
	}
}

// TestGuard_TrustedUIDs: with TrustedUIDs, a request with no token is
// served when its connection's peer is a process of a trusted uid, and
// refused 403 naming the rule and the peer's uid otherwise, with nothing
// recorded; a writer's token is served whoever sends it, a reader's
// cannot write, a wrong one is 401; a server whose connections were not
// accepted with PeerContext trusts no one.
func TestGuard_TrustedUIDs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the socket tables are Linux's")
	}
	t.Parallel()
	me := uint32(os.Geteuid())
	tok := &Tokens{Reader: "r-token-0123456789", Writer: "w-token-0123456789"}
	obs := `{"harness":"h","id":"x","session":"s","kind":"k","signals":[{"kind":"prompt"}]}`
	review := `{"session":"s","verdict":"allow","reason":"ok","by":"attacker"}`
	bearer := func(s string) http.Header { return http.Header{"Authorization": {"Bearer " + s}} }

	mine := newEnv(t, func(c *envSettings) { c.Tokens, c.TrustedUIDs, c.peers = tok, []uint32{me}, true })
	mine.do("GET", "/v1/sessions", "", nil, 200, nil)
	mine.do("GET", "/v1/sessions", "", bearer("stale"), 200, nil)
	mine.do("POST", "/v1/observations", obs, nil, 200, nil)
	mine.do("GET", "/metrics", "", nil, 200, nil)

	for name, e := range map[string]*env{
		"another uid":    newEnv(t, func(c *envSettings) { c.Tokens, c.TrustedUIDs, c.peers = tok, []uint32{me + 1}, true }),
		"no PeerContext": newEnv(t, func(c *envSettings) { c.Tokens, c.TrustedUIDs = tok, []uint32{me} }),
	} {
		before, _ := e.log.LastSeq(t.Context())
		var ae apiError
		for _, p := range []struct{ method, path, body string }{
			{"GET", "/v1/sessions", ""}, {"GET", "/v1/pending", ""}, {"GET", "/metrics", ""},
			{"POST", "/v1/observations", obs}, {"POST", "/v1/reviews/r1", review},
		} {
			e.do(p.method, p.path, p.body, nil, 403, &ae)
			if ae.Code != "forbidden" || !strings.Contains(ae.Error, "loopback clients of another user need a token") || !strings.Contains(ae.Error, "Authorization: Bearer …") || !strings.Contains(ae.Error, "http-tokens.json") {
				t.Errorf("%s: %s %s: %+v, want forbidden naming the rule", name, p.method, p.path, ae)
			}
			if name == "another uid" && !strings.Contains(ae.Error, "peer is uid "+strconv.Itoa(int(me))) {
				t.Errorf("%s: %s %s: %q does not name the peer's uid", name, p.method, p.path, ae.Error)
			}
		}
		if after, _ := e.log.LastSeq(t.Context()); after != before {
			t.Errorf("%s: refused requests recorded events %d..%d", name, before+1, after)
		}
		e.do("GET", "/v1/sessions", "", bearer("wrong"), 401, &ae)
		e.do("POST", "/v1/observations", obs, bearer(tok.Reader), 403, &ae)
		e.do("GET", "/v1/sessions", "", bearer(tok.Reader), 200, nil)
		e.do("POST", "/v1/observations", obs, bearer(tok.Writer), 200, nil)
		// The board's own files hold no data: its page loads to ask for a token.
		e.do("GET", "/", "", nil, 200, nil)
	}
}
