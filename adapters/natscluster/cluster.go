// Package natscluster runs a cluster of stock nats-server processes on
// loopback, built from the nats-server module in Logbook's go.mod, for
// the tests that check Logbook on many hosts: equal state across hosts,
// a reader that cannot write, node kills, host kills. Each node is a real
// process with its own JetStream file store (sync_interval: always), its
// own client, route and monitoring ports, and the users that `logbook
// creds cluster` writes; a test kills a node with SIGKILL by its pid and
// starts it again on the same store and ports.
package natscluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// ServerModule is the main package Build compiles: nats-server at the
// version go.mod requires.
const ServerModule = "github.com/nats-io/nats-server/v2"

// Build compiles pkg (a main package of the current module or one it
// requires, e.g. ServerModule) into dir/name with the go command in PATH
// and returns the binary's path. It runs in the module's directory tree
// (the caller's working directory), so the version built is go.mod's.
// It links as `go run` does, without DWARF and symbol table, into the go
// command's build cache, and copies the executable from there with
// cp(1): another Build of the same package from the same inputs (another
// test binary's, a later run's) links nothing.
func Build(ctx context.Context, dir, name, pkg string) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "run", "-exec", "cp", pkg, out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("natscluster: build %s: %w\n%s", pkg, err, b)
	}
	return out, nil
}

// Node is one nats-server process of a Cluster. Its methods are safe for
// concurrent use.
type Node struct {
	Name        string // server_name, e.g. "n1"
	Dir         string // holds node.conf, users.conf, jetstream/ and node.log
	ClientPort  int    // clients connect to nats://127.0.0.1:ClientPort
	ClusterPort int    // routes
	HTTPPort    int    // monitoring: /varz, /healthz, /jsz

	bin  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
}

// Cluster is a set of Nodes routed to each other as one NATS cluster
// named "logbook", each with JetStream.
type Cluster struct {
	Nodes []*Node
}

// Start writes a config for each of n nodes under dir and starts them:
// loopback ports picked free, JetStream store in the node's dir with
// sync_interval: always, routes to every node, and usersConf (a
// nats-server authorization block, as `logbook creds cluster` writes
// users.conf) included by each. It waits until every node answers
// /healthz and all agree on one JetStream meta leader (WaitMetaLeader), at
// most until ctx ends. A port picked free can be taken by another
// process before its node listens on it: a node that exits saying so is
// started again, with every node of the cluster on fresh ports and an
// empty store, up to startAttempts times in all. On error the nodes it
// started are killed.
func Start(ctx context.Context, bin, dir string, n int, usersConf []byte) (*Cluster, error) {
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, bin, dir, n, usersConf)
		if err == nil || attempt == startAttempts || !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			return c, err
		}
		for i := range n {
			if err := os.RemoveAll(filepath.Join(dir, fmt.Sprintf("n%d", i+1), "jetstream")); err != nil {
				return nil, err
			}
		}
	}
}

// startAttempts is how many times Start starts a cluster whose ports
// were taken before its nodes listened on them.
const startAttempts = 3

// errPortTaken is wrapped by a *ExitedError whose node's log says a port
// of its was in use.
var errPortTaken = errors.New("a port of the node is in use")

// ExitedError is a node's process that exited while it was awaited
// (WaitHealthy), with the last lines of its node.log.
type ExitedError struct {
	Node string // server_name
	Log  string // the end of node.log, at most exitedLogTail bytes
}

// exitedLogTail is how much of node.log an ExitedError carries.
const exitedLogTail = 2048

// Error names the node and quotes the end of its log.
func (e *ExitedError) Error() string {
	return fmt.Sprintf("natscluster: %s exited before it was healthy; the end of its node.log:\n%s", e.Node, e.Log)
}

// Unwrap returns errPortTaken when the log says a port was in use.
func (e *ExitedError) Unwrap() error {
	if strings.Contains(e.Log, "address already in use") {
		return errPortTaken
	}
	return nil
}

// start is one attempt of Start.
func start(ctx context.Context, bin, dir string, n int, usersConf []byte) (*Cluster, error) {
	ports, err := freePorts(3 * n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[3*i+1]))
	}
	for i := range n {
		nd := &Node{
			Name: fmt.Sprintf("n%d", i+1), Dir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			ClientPort: ports[3*i], ClusterPort: ports[3*i+1], HTTPPort: ports[3*i+2], bin: bin,
		}
		if err := os.MkdirAll(nd.Dir, 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(nd.Dir, "users.conf"), usersConf, 0o600); err != nil {
			return nil, err
		}
		if err := os.WriteFile(nd.Conf(), []byte(NodeConfig(nd.Name, nd.ClientPort, nd.ClusterPort, nd.HTTPPort, filepath.Join(nd.Dir, "jetstream"), routes)), 0o600); err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, nd)
	}
	for _, nd := range c.Nodes {
		if err := nd.Start(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	// A node that exits ends the wait for every node: the others would
	// wait for a meta leader it can no longer help elect.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for _, nd := range c.Nodes {
		go func() {
			nd.mu.Lock()
			done := nd.done
			nd.mu.Unlock()
			select {
			case <-done:
				cancel(&ExitedError{Node: nd.Name, Log: nd.logTail(exitedLogTail)})
			case <-wctx.Done():
			}
		}()
	}
	fail := func(err error) (*Cluster, error) {
		c.Stop()
		var exited *ExitedError
		if cause := context.Cause(wctx); errors.As(cause, &exited) && !errors.As(err, &exited) {
			err = cause
		}
		return nil, err
	}
	for _, nd := range c.Nodes {
		if err := nd.WaitHealthy(wctx); err != nil {
			return fail(err)
		}
	}
	if err := c.WaitMetaLeader(wctx); err != nil {
		return fail(err)
	}
	return c, nil
}

// WaitMetaLeader polls every node's /jsz until all of them name the same
// JetStream meta leader and answer /healthz 200 in the same round, or
// ctx ends. A node can pass /healthz and then lose its leader again while
// a later node joins and the meta group re-elects; only a round in which
// all agree means the cluster takes stream requests.
func (c *Cluster) WaitMetaLeader(ctx context.Context) error {
	var last string
	for {
		leaders := map[string]bool{}
		ok := true
		for _, nd := range c.Nodes {
			l, err := nd.MetaLeader(ctx)
			if err == nil {
				err = nd.healthy(ctx)
			}
			if err != nil || l == "" {
				ok = false
				last = fmt.Sprintf("%s: leader %q, %v", nd.Name, l, err)
				break
			}
			leaders[l] = true
		}
		if ok && len(leaders) == 1 {
			return nil
		}
		if ok {
			last = fmt.Sprintf("nodes name %d different meta leaders", len(leaders))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("natscluster: no JetStream meta leader agreed: %s: %w", last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// MetaLeader returns the name of the JetStream meta leader the node knows
// of, from its /jsz ("" while there is none).
func (nd *Node) MetaLeader(ctx context.Context) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/jsz", nd.HTTPPort), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		Meta *struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return "", fmt.Errorf("natscluster: %s /jsz: %w", nd.Name, err)
	}
	if v.Meta == nil {
		return "", nil
	}
	return v.Meta.Leader, nil
}

// NodeConfig returns a nats-server config (nats-server v2.15 syntax) for
// one node: client listener, monitoring port, JetStream with its store
// and sync_interval: always, the cluster "logbook" with routes, and
// `include users.conf` (resolved next to the config file).
func NodeConfig(name string, client, cluster, http int, storeDir string, routes []string) string {
	q := make([]string, len(routes))
	for i, r := range routes {
		q[i] = strconv.Quote(r)
	}
	return fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d

jetstream {
  store_dir: %s
  sync_interval: always
}

cluster {
  name: logbook
  listen: 127.0.0.1:%d
  routes: [%s]
}

include users.conf
`, name, client, http, strconv.Quote(storeDir), cluster, strings.Join(q, ", "))
}

// URL returns every node's client URL, comma-separated, as --nats-url
// takes them.
func (c *Cluster) URL() string {
	var us []string
	for _, nd := range c.Nodes {
		us = append(us, nd.URL())
	}
	return strings.Join(us, ",")
}

// Node returns the node named name, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, nd := range c.Nodes {
		if nd.Name == name {
			return nd
		}
	}
	return nil
}

// Stop kills every node that runs (SIGKILL) and waits for them.
func (c *Cluster) Stop() {
	for _, nd := range c.Nodes {
		nd.Kill()
	}
}

// Conf is the node's config file.
func (nd *Node) Conf() string { return filepath.Join(nd.Dir, "node.conf") }

// URL is the node's client URL.
func (nd *Node) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", nd.ClientPort) }

// Start starts the node's process (it must not run), its output appended
// to node.log in its dir. It does not wait for the node to be ready.
func (nd *Node) Start() error { return nd.startConf(nd.Conf()) }

// startConf starts the node's process with config file conf.
func (nd *Node) startConf(conf string) error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil {
		return fmt.Errorf("natscluster: %s runs already (pid %d)", nd.Name, nd.cmd.Process.Pid)
	}
	logf, err := os.OpenFile(filepath.Join(nd.Dir, "node.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	// The node dies with the process that started it, however that ends
	// (a test's -timeout panic runs no cleanup), and not before: the
	// parent-death signal follows the OS thread that forks it, which
	// sandboxtest.Start keeps for the life of the process. A thread the
	// caller's goroutine happened to run on can end while the node runs
	// (a goroutine of another test locked to it returns: a thread
	// thrown away after a setresuid), and the node would get SIGKILL.
	cmd := sandboxtest.DieWithTest(exec.Command(nd.bin, "-c", conf))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := sandboxtest.Start(cmd); err != nil {
		logf.Close()
		return fmt.Errorf("natscluster: start %s: %w", nd.Name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(done)
	}()
	nd.cmd, nd.done = cmd, done
	return nil
}

// Pid returns the running process's pid, or 0.
func (nd *Node) Pid() int {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return 0
	}
	return nd.cmd.Process.Pid
}

// Kill sends SIGKILL to the node's process by its pid and waits until it
// is gone; it does nothing when the node does not run.
func (nd *Node) Kill() {
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.cmd, nd.done = nil, nil
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// WaitHealthy polls the node's /healthz until it answers 200 (the server
// is up and its JetStream is current), or ctx ends. It fails at once,
// with an *ExitedError, when the node's process exits first.
func (nd *Node) WaitHealthy(ctx context.Context) error {
	nd.mu.Lock()
	done := nd.done // nil when the node does not run: only ctx ends the wait
	nd.mu.Unlock()
	for {
		err := nd.healthy(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("natscluster: %s not healthy: %v: %w", nd.Name, err, ctx.Err())
		case <-done:
			return &ExitedError{Node: nd.Name, Log: nd.logTail(exitedLogTail)}
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// logTail returns the last n bytes of the node's node.log, or what
// reading it failed with.
func (nd *Node) logTail(n int64) string {
	f, err := os.Open(filepath.Join(nd.Dir, "node.log"))
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		if _, err := f.Seek(fi.Size()-n, io.SeekStart); err != nil {
			return err.Error()
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// healthy asks the node's /healthz once; nil for 200, else an error with
// the status and the start of the answer.
func (nd *Node) healthy(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/healthz", nd.HTTPPort), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	b := make([]byte, 512)
	n, _ := resp.Body.Read(b)
	return fmt.Errorf("%d %s", resp.StatusCode, b[:n])
}

// JetStreamConfig is what a node's /varz says of its JetStream settings.
type JetStreamConfig struct {
	StoreDir     string        `json:"store_dir"`
	SyncInterval time.Duration `json:"sync_interval"`
	SyncAlways   bool          `json:"sync_always"`
}

// JetStream returns the node's JetStream settings from its monitoring
// endpoint (/varz).
func (nd *Node) JetStream(ctx context.Context) (JetStreamConfig, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/varz", nd.HTTPPort), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return JetStreamConfig{}, err
	}
	defer resp.Body.Close()
	var v struct {
		JetStream struct {
			Config *JetStreamConfig `json:"config"`
		} `json:"jetstream"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return JetStreamConfig{}, fmt.Errorf("natscluster: %s /varz: %w", nd.Name, err)
	}
	if v.JetStream.Config == nil {
		return JetStreamConfig{}, errors.New("natscluster: " + nd.Name + " /varz: no jetstream config")
	}
	return *v.JetStream.Config, nil
}

// freePorts returns n distinct loopback ports that were free a moment
// ago, picked below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range) when there is room there: a
// node is killed and started again on its own ports, and a port of the
// ephemeral range, free while the node is down, can be taken meanwhile
// as the local port of any outgoing connection (a route between the
// other nodes, a client), where a port below it is taken only by a
// listener that names it. Such a listener is another process's
// freePorts (clusters of other test binaries run beside this one), so
// each port picked there is also claimed, for the life of the process,
// by an flock(2) on a file named after it (claimPort), which every
// freePorts takes before it picks a port: a node's port is not picked
// elsewhere while the node is down. Ports from the range itself (a
// listener on port 0) are the fallback.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo, hi := staticPorts()
	var ps []int
	for range n {
		var l net.Listener
		for try := 0; l == nil && hi > lo && try < 64; try++ {
			port := lo + rand.IntN(hi-lo)
			if !claimPort(port) {
				continue
			}
			l, _ = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		}
		if l == nil {
			var err error
			if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				return nil, err
			}
		}
		ls = append(ls, l)
		ps = append(ps, l.Addr().(*net.TCPAddr).Port)
	}
	return ps, nil
}

// claimed holds the files whose locks claim this process's ports
// (claimPort) open until it exits.
var claimed struct {
	sync.Mutex
	files []*os.File
}

// claimPort claims port for this process, across the processes that
// run freePorts on this host: an exclusive flock(2) on
// <temp dir>/logbook-natscluster-ports/<port>, held until the process
// exits. It reports false when another process holds it; a claim that
// cannot be made at all (no temp dir) does not stop the pick.
func claimPort(port int) bool {
	dir := filepath.Join(os.TempDir(), "logbook-natscluster-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return !errors.Is(err, syscall.EWOULDBLOCK)
	}
	claimed.Lock()
	claimed.files = append(claimed.files, f)
	claimed.Unlock()
	return true
}

// staticPorts returns the ports freePorts picks from, [lo, hi): from
// 10000 up to the start of the kernel's ephemeral range; an empty range
// when the range starts at 10000 or below or cannot be read.
func staticPorts() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	first, err := strconv.Atoi(f[0])
	if err != nil || first <= 10000 {
		return 0, 0
	}
	return 10000, first
}

// StartIsolated starts the node's process (it must not run) with its
// routes withheld and its route listener moved to a free port, so no
// other node reaches it and it reaches none: the node is cut off from the
// cluster while clients still reach it, as in a network partition. Stop
// it with Kill and Start it again to heal.
func (nd *Node) StartIsolated() error {
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	conf := filepath.Join(nd.Dir, "isolated.conf")
	text := NodeConfig(nd.Name, nd.ClientPort, ports[0], nd.HTTPPort, filepath.Join(nd.Dir, "jetstream"), nil)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return err
	}
	return nd.startConf(conf)
}
