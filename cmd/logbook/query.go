package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
)

// caller sends one API request and decodes the answer into resp.
type caller func(ctx context.Context, verb string, req, resp any) error

// withAPI runs fn with a caller that reaches the running server, or, when
// none runs, a service of this process's own on the data dir whose
// projection has first caught up with the log.
func withAPI(ctx context.Context, g *globals, fn func(b *backend, call caller) error) error {
	b, err := openBackend(ctx, g)
	if err != nil {
		return err
	}
	defer b.Close()
	if b.remote {
		return fn(b, func(ctx context.Context, verb string, req, resp any) error {
			return callAPI(ctx, b.nc, b.api, verb, req, resp)
		})
	}
	store, err := openViews(ctx, g, b.dd, b.log)
	if err != nil {
		return err
	}
	defer store.Close()
	svc, err := newService(b, store)
	if err != nil {
		return err
	}
	if _, err := svc.runner.RunToEnd(ctx); err != nil {
		return fmt.Errorf("catch up projections: %w", err)
	}
	handlers := map[string]func(context.Context, []byte) (any, error){
		verbHook: svc.hook, verbSessions: svc.sessions, verbSession: svc.session, verbVerify: svc.verify,
	}
	maps.Copy(handlers, svc.commandHandlers())
	maps.Copy(handlers, svc.sessionHandlers())
	return fn(b, func(ctx context.Context, verb string, req, resp any) error {
		h, ok := handlers[verb]
		if !ok {
			return fmt.Errorf("%s needs a running server", verb)
		}
		in, err := json.Marshal(req)
		if err != nil {
			return err
		}
		v, err := h(ctx, in)
		if err != nil {
			return err
		}
		out, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return json.Unmarshal(out, resp)
	})
}
