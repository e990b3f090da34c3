package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	httpapi "github.com/logbook-dev/logbook/adapters/http"
)

// pprofMemRate is runtime.MemProfileRate under serve --pprof: the heap
// profile samples one allocation per 64 KiB on average (Go's default is
// 512 KiB).
const pprofMemRate = 64 << 10

// memFigures is what GET /debug/memstats on the --pprof listener answers,
// as JSON: the Go runtime's memory figures in bytes, the number of
// goroutines and of completed GC cycles. With ?gc=1 a garbage collection
// runs first — two, so that what sync.Pools hold (JetStream's message
// block buffers among them) is dropped too — and HeapAlloc is the heap
// still in use after it.
type memFigures struct {
	HeapAlloc    uint64 `json:"heap_alloc"`    // bytes of live and not yet swept heap objects
	HeapInuse    uint64 `json:"heap_inuse"`    // bytes in in-use heap spans
	HeapSys      uint64 `json:"heap_sys"`      // bytes of heap obtained from the OS
	HeapReleased uint64 `json:"heap_released"` // bytes of heap returned to the OS
	StackInuse   uint64 `json:"stack_inuse"`   // bytes of goroutine stacks
	Sys          uint64 `json:"sys"`           // bytes obtained from the OS in all
	HeapObjects  uint64 `json:"heap_objects"`  // live heap objects
	NumGC        uint32 `json:"num_gc"`        // completed GC cycles
	Goroutines   int    `json:"goroutines"`    // goroutines now
}

// readMemFigures reads the runtime's figures, after a GC when gc is true.
func readMemFigures(gc bool) memFigures {
	if gc {
		runtime.GC()
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memFigures{
		HeapAlloc: m.HeapAlloc, HeapInuse: m.HeapInuse, HeapSys: m.HeapSys, HeapReleased: m.HeapReleased,
		StackInuse: m.StackInuse, Sys: m.Sys, HeapObjects: m.HeapObjects, NumGC: m.NumGC,
		Goroutines: runtime.NumGoroutine(),
	}
}

// pprofGuard answers 403 to a request a web page could have made: a
// Host header that is not a loopback name (DNS rebinding; the HTTP API's
// rule, httpapi.LoopbackHost), an Origin header of another origin, or a
// Sec-Fetch-Site header other than same-origin or none (a cross-site
// <img> or link, which sends no Origin but could still start a CPU
// profile or a GC). Browsers set Origin and Sec-Fetch-Site themselves; a
// page cannot forge them. go tool pprof and curl send neither.
func pprofGuard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		why := ""
		if !httpapi.LoopbackHost(r.Host) {
			why = fmt.Sprintf("Host %q is not a loopback name", r.Host)
		} else if o := r.Header.Get("Origin"); o != "" && !httpapi.SameOrigin(o, r.Host) {
			why = fmt.Sprintf("Origin %q is not this server", o)
		} else if site := r.Header.Get("Sec-Fetch-Site"); site != "" && !strings.EqualFold(site, "same-origin") && !strings.EqualFold(site, "none") {
			why = fmt.Sprintf("Sec-Fetch-Site %q: a page of another site", site)
		}
		if why != "" {
			http.Error(w, "forbidden: "+why, http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// pprofMux is the --pprof listener's handler: net/http/pprof's handlers
// under /debug/pprof/ and /debug/memstats (memFigures), on a mux of its
// own, every route behind pprofGuard; nothing is served from
// http.DefaultServeMux.
func pprofMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/memstats", func(w http.ResponseWriter, r *http.Request) {
		gc, _ := strconv.ParseBool(r.URL.Query().Get("gc"))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(readMemFigures(gc))
	})
	return pprofGuard(mux)
}

// pprofListenAddr checks a --pprof value (host:port, the host a loopback
// address or localhost, the port 0 to 65535) and returns the address to
// listen on, the host as an IP. The profiles show the process's memory
// and code paths, so any other address is refused. Errors are usage
// errors naming the flag and the value.
func pprofListenAddr(addr string) (string, error) {
	if err := checkAddrFlags(map[string]string{"pprof": addr}); err != nil {
		return "", err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", usageErrorf("--pprof %q: want a loopback host:port such as 127.0.0.1:6060", addr)
	}
	ip := net.ParseIP(host)
	if host == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
	}
	if ip == nil || !ip.IsLoopback() {
		return "", usageErrorf("--pprof %q: the profiling endpoint listens on a loopback address only (127.0.0.1 or ::1), not %q", addr, host)
	}
	return net.JoinHostPort(ip.String(), port), nil
}

// listenPprof checks addr as pprofListenAddr does, listens on it and
// serves pprofMux until ctx is done. It returns the address listened on
// (port 0 picks one) and a stop function that closes the listener. An
// address it cannot listen on (one in use) is an error naming it.
func listenPprof(ctx context.Context, addr string) (string, func(), error) {
	at, err := pprofListenAddr(addr)
	if err != nil {
		return "", nil, err
	}
	// Sample one allocation per 64 KiB rather than 512 KiB, so that the
	// heap profile of a heap of a few MiB says where its growth is.
	runtime.MemProfileRate = pprofMemRate
	l, err := net.Listen("tcp", at)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return "", nil, fmt.Errorf("--pprof %s: the address is in use by another process; pick a free port (or port 0)", addr)
		}
		return "", nil, fmt.Errorf("--pprof %s: cannot listen: %w", addr, err)
	}
	srv := &http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // ends with ErrServerClosed when stopped
	stop := func() { srv.Close() }
	go func() {
		<-ctx.Done()
		stop()
	}()
	return l.Addr().String(), stop, nil
}
