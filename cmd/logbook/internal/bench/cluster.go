package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// benchCluster is three nats-server nodes in this process, routed to each
// other on loopback, each with a JetStream file store and sync_interval
// always, holding the LOGBOOK stream at R3; writers reach the first node
// over TCP, a follower host the second.
type benchCluster struct {
	nodes    []*server.Server
	conns    []*nats.Conn
	log      *benchLog // on the first node's connection
	follower *natslog.Log
}

// clusterLog returns the cluster rows' cluster, started on first use.
func (e *benchEnv) clusterLog(ctx context.Context) (*benchLog, error) {
	if e.cluster != nil {
		return e.cluster.log, nil
	}
	c, err := startBenchCluster(ctx, filepath.Join(e.dir, "cluster"), e.reg)
	if err != nil {
		return nil, err
	}
	e.cluster = c
	return c.log, nil
}

func startBenchCluster(ctx context.Context, dir string, reg *events.Registry) (c *benchCluster, err error) {
	c = &benchCluster{}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	var routes []*url.URL
	var ports []int
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		l.Close()
		routes = append(routes, &url.URL{Scheme: "nats", Host: l.Addr().String()})
	}
	for i := range 3 {
		opts := &server.Options{
			ServerName: fmt.Sprintf("bench-n%d", i+1), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: filepath.Join(dir, fmt.Sprintf("n%d", i+1)), SyncAlways: true,
			NoSigs: true, NoLog: true, MaxClosedClients: natslog.MaxClosedClients,
			Cluster: server.ClusterOpts{Name: "logbook-bench", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		}
		s, err := server.NewServer(opts)
		if err != nil {
			return nil, fmt.Errorf("bench cluster: %w", err)
		}
		s.Start()
		c.nodes = append(c.nodes, s)
	}
	for _, s := range c.nodes {
		if !s.ReadyForConnections(30 * time.Second) {
			return nil, fmt.Errorf("bench cluster: %s not ready", s.Name())
		}
		nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(-1))
		if err != nil {
			return nil, err
		}
		c.conns = append(c.conns, nc)
	}
	// The stream can be made once the nodes have a meta leader.
	var l *natslog.Log
	for deadline := time.Now().Add(30 * time.Second); ; {
		l, err = natslog.Open(ctx, c.conns[0], natslog.Config{Registry: reg, Replicas: 3})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("bench cluster: create the stream: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	js, _ := jetstream.New(c.conns[0])
	c.log = &benchLog{log: l, js: js}
	if c.follower, err = natslog.Open(ctx, c.conns[1], natslog.Config{Registry: reg}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *benchCluster) close() {
	if c.follower != nil {
		c.follower.Close()
	}
	if c.log != nil {
		c.log.log.Close()
	}
	for _, nc := range c.conns {
		nc.Close()
	}
	for _, s := range c.nodes {
		s.Shutdown()
	}
	for _, s := range c.nodes {
		s.WaitForShutdown()
	}
}

// clusterRows are the cluster group's rows: appends on the R3 cluster
// against raw publishing on it, and a follower host's lag.
func (e *benchEnv) clusterRows() []benchWorkload {
	var ws []benchWorkload
	for _, per := range []int{1, 10} {
		a := benchAppend{env: e, mode: natslog.FsyncAlways, writers: 8, per: per, cluster: true}
		ws = append(ws, benchWorkload{
			group: "cluster", name: a.name(), unit: "ev", logbook: a.logbook,
			baselines: []benchBaseline{
				{name: a.rawName() + ", R3", run: a.raw},
				{name: "atomic batch ×500, 1 publisher, R3", run: a.ceiling},
			},
		})
	}
	ws = append(ws, benchWorkload{
		group: "cluster", name: "follower lag: append on node 1 → projection on node 2's host, 8 writers, R3", unit: "ev",
		logbook:   e.followerLag,
		baselines: []benchBaseline{{name: "publish on node 1 → ordered consumer on node 2", run: e.followerLagRaw}},
	})
	return ws
}

// followerLag appends one-event decisions from 8 writers on the first
// node while a follower (a projection in Pebble on disk, reading through
// the second node) follows; each operation's latency is from the start of
// its append to the follower's projection holding it.
func (e *benchEnv) followerLag(ctx context.Context) (benchSample, error) {
	if _, err := e.clusterLog(ctx); err != nil {
		return benchSample{}, err
	}
	c := e.cluster
	run := e.runs.Add(1)
	store, err := projections.Open(filepath.Join(e.dir, fmt.Sprintf("follower-%d", run)), projections.Options{})
	if err != nil {
		return benchSample{}, err
	}
	defer store.Close()
	rctx, cancel := context.WithCancel(ctx)
	runner := &projections.Runner{Log: c.follower, Store: store}
	done := make(chan error, 1)
	go func() { done <- runner.Run(rctx) }()
	defer func() {
		cancel()
		<-done
	}()
	// The follower first catches up with the rows before this one.
	end, err := c.log.log.LastEventSeq(ctx)
	if err != nil {
		return benchSample{}, err
	}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute)
	err = store.WaitFor(wctx, end)
	wcancel()
	if err != nil {
		return benchSample{}, fmt.Errorf("follower catch-up: %w", err)
	}
	n := max(e.cfg.Appends/4, 8)
	return benchWriters(8, n, 1, func(w int) func() error {
		agg := events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("bench-%d-w%d", run, w)}
		var last, ver uint64
		return func() error {
			ap, err := c.log.log.Append(ctx, e.decision(agg, last, ver+1, 1))
			if err != nil {
				return err
			}
			last, ver = ap.Last, ver+1
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			return store.WaitFor(wctx, ap.Last)
		}
	})
}

// followerLagRaw publishes the same messages from 8 writers on the first
// node while an ordered consumer on the second node reads them; each
// operation's latency is from the start of its publish to its arrival.
func (e *benchEnv) followerLagRaw(ctx context.Context) (benchSample, error) {
	if _, err := e.clusterLog(ctx); err != nil {
		return benchSample{}, err
	}
	c := e.cluster
	run := e.runs.Add(1)
	prefix := fmt.Sprintf("%s.bench-%d", events.SubjectOutput, run)
	fjs, _ := jetstream.New(c.conns[1])
	cons, err := fjs.OrderedConsumer(ctx, natslog.StreamName, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + ".>"}, DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return benchSample{}, err
	}
	var (
		mu      sync.Mutex
		arrived = map[string]chan struct{}{}
	)
	wait := func(subj string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		ch, ok := arrived[subj]
		if !ok {
			ch = make(chan struct{}, 1024)
			arrived[subj] = ch
		}
		return ch
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { wait(m.Subject()) <- struct{}{} })
	if err != nil {
		return benchSample{}, err
	}
	defer cc.Stop()
	time.Sleep(100 * time.Millisecond) // the consumer is in place before the first publish
	body := e.body()
	n := max(e.cfg.Appends/4, 8)
	return benchWriters(8, n, 1, func(w int) func() error {
		subject := fmt.Sprintf("%s.w%d", prefix, w)
		ch := wait(subject)
		return func() error {
			if err := benchPublish(ctx, c.log.js, subject, [][]byte{body}); err != nil {
				return err
			}
			select {
			case <-ch:
				return nil
			case <-time.After(30 * time.Second):
				return errors.New("follower: no message after 30 s")
			}
		}
	})
}
