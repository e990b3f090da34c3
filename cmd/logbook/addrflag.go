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
