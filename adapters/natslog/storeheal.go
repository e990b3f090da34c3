package natslog

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// A write the store could not make (a full disk, a file system remounted
// read-only, an I/O error) is critical to JetStream: the stream records
// the error and from then on stores nothing, and answers no publish,
// until the server is restarted (nats-server 2.15, stream.go
// setWriteErrLocked; filestore.go setWriteErr). An embedded Server does
// not wait for an operator: it watches for such an error and, once its
// store directory takes a probe write again, restarts JetStream on the
// same directory. JetStream recovers each stream from its files as at a
// start (a record the failed write left torn is dropped by that
// recovery, and it was never acknowledged); publishes and reads made
// during the restart find no responder and are retried by the Log (see
// ElectionWait). Connections stay up.

// healEvery is how often an embedded Server looks for a store write
// error.
const healEvery = time.Second

// storeWriteError returns the first stream write error the server's
// health check reports (e.g. "JetStream stream '$G > LOGBOOK' write
// error: write …: no space left on device"), or "".
func (s *Server) storeWriteError() string {
	h := s.ns.Healthz(&server.HealthzOptions{Details: true})
	if h == nil {
		return ""
	}
	for _, e := range h.Errors {
		if e.Type == server.HealthzErrorStream && strings.Contains(e.Error, "write error") {
			return e.Error
		}
	}
	if strings.Contains(h.Error, "write error") {
		return h.Error
	}
	return ""
}

// writable reports whether dir takes a 64 KiB probe write and its fsync.
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, 64<<10))
	return errors.Join(err, f.Sync(), f.Close())
}

// HealStore restarts JetStream if a stream holds a write error and the
// store directory takes writes again. It returns the write error it
// cleared ("" if none was held, or if the directory still refuses
// writes) and an error if JetStream could not be started again; the
// Server is then unusable and should be shut down. Safe to call at any
// time; an embedded Server calls it every healEvery by itself.
func (s *Server) HealStore() (string, error) {
	s.healMu.Lock()
	defer s.healMu.Unlock()
	werr := s.storeWriteError()
	if werr == "" {
		return "", nil
	}
	if err := writable(s.storeDir); err != nil {
		return "", nil
	}
	cfg := s.ns.JetStreamConfig()
	if cfg == nil {
		return "", nil
	}
	// EnableJetStream places the store under <StoreDir>/jetstream, as at
	// the start; the running config names that directory already.
	js := *cfg
	js.StoreDir = s.storeDir
	if err := s.ns.ShutdownJetStream(); err != nil {
		return werr, fmt.Errorf("natslog: embedded: restart JetStream after %q: shut down: %w", werr, err)
	}
	if err := s.ns.EnableJetStream(&js); err != nil {
		return werr, fmt.Errorf("natslog: embedded: restart JetStream after %q: %w", werr, err)
	}
	return werr, nil
}

// heal calls HealStore every healEvery until the Server shuts down, and
// tells EmbeddedConfig.Healed of each restart.
func (s *Server) heal() {
	t := time.NewTicker(healEvery)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		if werr, err := s.HealStore(); werr != "" && s.cfg.Healed != nil {
			s.cfg.Healed(werr, err)
		}
	}
}
