// Command refresh writes adapters/usage/litellm.json, the subset of
// LiteLLM's model price table that Logbook ships, from a copy of the
// whole table (model_prices_and_context_window.json, as the litellm
// package on PyPI ships it in litellm/model_prices_and_context_window_backup.json):
//
//	go run ./adapters/usage/refresh -in full.json -version 1.80.0 [-read 2026-12-02] [-out adapters/usage/litellm.json]
//
// .ci/refresh-prices fetches the table and runs it. It exits 1
// naming what it could not read or write.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/logbook-dev/logbook/adapters/usage"
)

func main() {
	in := flag.String("in", "", "LiteLLM's model_prices_and_context_window.json")
	out := flag.String("out", "adapters/usage/litellm.json", "where to write the subset")
	version := flag.String("version", "", "the LiteLLM release (or revision) the table comes from")
	read := flag.String("read", time.Now().UTC().Format(time.DateOnly), "the day the table was taken, YYYY-MM-DD")
	flag.Parse()
	if *in == "" || *version == "" {
		fmt.Fprintln(os.Stderr, "refresh: -in and -version are required")
		os.Exit(2)
	}
	full, err := os.ReadFile(*in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "refresh: %v\n", err)
		os.Exit(1)
	}
	b, err := usage.SubsetLiteLLM(full, *version, *read)
	if err != nil {
		fmt.Fprintf(os.Stderr, "refresh: %s: %v\n", *in, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "refresh: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s: LiteLLM %s, read %s\n", *out, *version, *read)
}
