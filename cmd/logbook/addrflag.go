package main

import (
	"net"
	"sort"
	"strconv"
)

// checkAddrFlags checks host:port flag values (flag name to value; empty
// values are skipped) before anything starts: each must split into a
// host and a port of 0 to 65535. Errors are usage errors naming the flag
// and the value.
func checkAddrFlags(flags map[string]string) error {
	names := make([]string, 0, len(flags))
	for n := range flags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		v := flags[name]
		if v == "" {
			continue
		}
		_, port, err := net.SplitHostPort(v)
		if err != nil {
			return usageErrorf("--%s %q: want host:port such as 127.0.0.1:7070", name, v)
		}
		n, err := strconv.ParseUint(port, 10, 64)
		switch {
		case err != nil && port == "":
			return usageErrorf("--%s %q: no port; want host:port such as 127.0.0.1:7070", name, v)
		case err != nil:
			return usageErrorf("--%s %q: port %q is not a number", name, v, port)
		case n > 65535:
			return usageErrorf("--%s %q: port out of range (0 to 65535)", name, v)
		}
	}
	return nil
}

// checkListen refuses, as a usage error naming the value, a --listen that
// is not a loopback host:port (localhost or a loopback IP address, a port
// of 0 to 65535): the embedded server takes clients of this machine only.
func checkListen(listen string) error {
	if listen == "" {
		return usageErrorf("--listen: want a loopback host:port such as 127.0.0.1:0")
	}
	h, p, err := net.SplitHostPort(listen)
	if err != nil {
		return usageErrorf("--listen %s: want a loopback host:port such as 127.0.0.1:0", listen)
	}
	if _, err := strconv.ParseUint(p, 10, 16); err != nil {
		return usageErrorf("--listen %s: port %q: want 0 to 65535 (0 picks one)", listen, p)
	}
	if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageErrorf("--listen %s: %q is not a loopback address: clients reach serve from this machine only (127.0.0.1, ::1 or localhost)", listen, h)
	}
	return nil
}
