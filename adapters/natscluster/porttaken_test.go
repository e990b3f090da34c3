package natscluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWaitHealthy_PortTaken: a node whose client port another process
// holds exits at once; WaitHealthy says so at once, with the node's log,
// rather than polling a dead node until its context ends. Start, whose
// ports another process can take between picking and listening, starts
// such a cluster again on fresh ports (errPortTaken).
func TestWaitHealthy_PortTaken(t *testing.T) {
	t.Parallel()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	nd := &Node{Name: "n1", Dir: dir, ClientPort: l.Addr().(*net.TCPAddr).Port, ClusterPort: ports[0], HTTPPort: ports[1], bin: natsServerBin}
	if err := os.WriteFile(filepath.Join(dir, "users.conf"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nd.Conf(), []byte(NodeConfig(nd.Name, nd.ClientPort, nd.ClusterPort, nd.HTTPPort, filepath.Join(dir, "jetstream"), []string{fmt.Sprintf("nats://127.0.0.1:%d", ports[0])})), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := nd.Start(); err != nil {
		t.Fatal(err)
	}
	defer nd.Kill()
	ctx := t.Context()
	start := time.Now()
	err = nd.WaitHealthy(ctx)
	var exited *ExitedError
	if !errors.As(err, &exited) || !errors.Is(err, errPortTaken) {
		t.Fatalf("WaitHealthy = %v; want an *ExitedError wrapping errPortTaken", err)
	}
	if !strings.Contains(err.Error(), "n1 exited before it was healthy") {
		t.Errorf("the error %q does not name the node", err)
	}
	t.Logf("failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// TestFreePorts_OutsideEphemeralRange: the ports picked for nodes lie
// below the kernel's ephemeral range when it leaves room there, so an
// outgoing connection's local port never takes the port of a node that
// is down between a kill and its start again (TestLinearizableUnderFaults
// once failed so: "listen tcp 127.0.0.1:44453: bind: address already in
// use" on n3's restart); and they are distinct.
func TestFreePorts_OutsideEphemeralRange(t *testing.T) {
	lo, hi := staticPorts()
	if hi <= lo {
		t.Skip("the ephemeral range leaves no room below it here")
	}
	ps, err := freePorts(30)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if p < lo || p >= hi {
			t.Errorf("port %d outside [%d, %d)", p, lo, hi)
		}
		if seen[p] {
			t.Errorf("port %d picked twice", p)
		}
		seen[p] = true
	}
}

// A port another process has claimed (its flock held on the port's file,
// as that process's freePorts holds it while its node is down) is not
// claimed again here; once let go, it is.
func TestClaimPort_HeldElsewhere(t *testing.T) {
	lo, hi := staticPorts()
	if hi <= lo {
		t.Skip("the ephemeral range leaves no room below it here")
	}
	port := lo + (os.Getpid()*7919)%(hi-lo)
	dir := filepath.Join(os.TempDir(), "logbook-natscluster-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	// Another open file description holds the lock, as another process's
	// would.
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		t.Skipf("port %d is claimed already: %v", port, err)
	}
	if claimPort(port) {
		t.Errorf("port %d claimed while another holds it", port)
	}
	f.Close()
	if !claimPort(port) {
		t.Errorf("port %d not claimed once let go", port)
	}
}
