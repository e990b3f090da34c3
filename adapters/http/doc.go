// Package httpapi is Logbook's HTTP face (folder adapters/http): the JSON
// API under /v1/ read from the projections, the gap-free Server-Sent
// Events stream of the log (/v1/stream), agent-neutral observations from
// harnesses (POST /v1/observations, schema logbook-observation/1), the
// OpenAPI document (/v1/openapi.json), the live board (/, embedded HTML,
// CSS and JavaScript with no build step and nothing loaded from
// elsewhere) and the Prometheus metrics (/metrics).
//
// A Server owns one goroutine, Run, which follows the log into a ring of
// the newest events (Hub); every SSE subscriber is a cursor reading that
// ring or, further back, the log itself, so subscribers cost no memory
// of their own and the hand-over from catch-up to live neither skips nor
// repeats a sequence. cmd/logbook wires it into `serve --http`.
package httpapi
