// Package profiling serves a process's Go profiles (net/http/pprof) and
// its runtime memory figures on a listener of their own, behind a guard
// that refuses requests a web page could have made. `logbook serve
// --pprof` uses it; the address it listens on is the caller's to check.
package profiling

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"strconv"
	"strings"
	"time"

	httpapi "github.com/logbook-dev/logbook/adapters/http"
)

// MemRate is runtime.MemProfileRate while profiles are served (Listen
// sets it): the heap profile samples one allocation per 64 KiB on
// average (Go's default is 512 KiB), fine enough to tell which cache
// holds a few hundred KiB more than an hour ago.
const MemRate = 64 << 10

// MemFigures is what GET /debug/memstats answers, as JSON: the Go
// runtime's memory figures in bytes, the number of goroutines and of
// completed GC cycles. With ?gc=1 a garbage collection runs first — two,
// so that what sync.Pools hold (JetStream's message block buffers among
// them) is dropped too — and HeapAlloc is the heap still in use after it.
type MemFigures struct {
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

// ReadMemFigures reads the runtime's figures, after two garbage
// collections when gc is true (it then blocks for their time).
func ReadMemFigures(gc bool) MemFigures {
	if gc {
		runtime.GC()
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return MemFigures{
		HeapAlloc: m.HeapAlloc, HeapInuse: m.HeapInuse, HeapSys: m.HeapSys, HeapReleased: m.HeapReleased,
		StackInuse: m.StackInuse, Sys: m.Sys, HeapObjects: m.HeapObjects, NumGC: m.NumGC,
		Goroutines: runtime.NumGoroutine(),
	}
}

// Guard answers 403 to a request a web page could have made: a Host
// header that is not a loopback name (DNS rebinding; the HTTP API's rule,
// httpapi.LoopbackHost), an Origin header of another origin, or a
// Sec-Fetch-Site header other than same-origin or none (a cross-site
// <img> or link, which sends no Origin but could still start a CPU
// profile or a GC). Browsers set Origin and Sec-Fetch-Site themselves; a
// page cannot forge them. go tool pprof and curl send neither. Other
// requests go to h.
func Guard(h http.Handler) http.Handler {
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

// Mux returns the profiles' handler: net/http/pprof's handlers under
// /debug/pprof/ and /debug/memstats (MemFigures), on a mux of its own,
// every route behind Guard; nothing is served from http.DefaultServeMux.
func Mux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/memstats", func(w http.ResponseWriter, r *http.Request) {
		gc, _ := strconv.ParseBool(r.URL.Query().Get("gc"))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(ReadMemFigures(gc))
	})
	return Guard(mux)
}

// Listen sets runtime.MemProfileRate to MemRate, listens on addr (TCP
// host:port; the caller has checked it is loopback) and serves Mux until
// ctx is done or stop is called, on goroutines of its own that end then.
// It returns the address listened on (port 0 picks one) and stop, which
// closes the listener and the connections; stop may be called more than
// once. An error is net.Listen's, unwrapped (errors.Is(err,
// syscall.EADDRINUSE) for an address in use).
func Listen(ctx context.Context, addr string) (at string, stop func(), err error) {
	runtime.MemProfileRate = MemRate
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: Mux(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // ends with ErrServerClosed when stopped
	stop = func() { srv.Close() }
	go func() {
		<-ctx.Done()
		stop()
	}()
	return l.Addr().String(), stop, nil
}
