package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/datadir"
)

// A second serve on a data dir a serve runs on, with the same --http
// address, is refused for the data dir, naming the serve that holds it,
// not sent to look for another port.
func TestServe_SecondOnTheSameDataDirNamesTheFirst(t *testing.T) {
	data := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	logs := &syncBuffer{}
	go func() {
		served <- runCLI(ctx, []string{"--data", data, "serve", "--workers", "0", "--http", addr}, strings.NewReader(""), logs, logs)
	}()
	defer func() {
		stop()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("first serve: %v\n%s", err, logs.String())
		}
	}()
	waitServer(t, dataDir(data))
	var out syncBuffer
	err = runCLI(t.Context(), []string{"--data", data, "serve", "--workers", "0", "--http", addr}, strings.NewReader(""), &out, &out)
	if !errors.Is(err, datadir.ErrBusy) || !strings.Contains(err.Error(), "is held by logbook serve pid ") || strings.Contains(err.Error(), "port is taken") {
		t.Fatalf("second serve: %v, want the data dir in use by the first\n%s", err, out.String())
	}
}
