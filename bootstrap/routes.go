package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/http/server"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
)

// Route is one method and path the HTTP server registers, in gin's syntax (":ws").
type Route struct {
	Method, Path string
}

// RegisteredRoutes opens cfg's database and builds the service graph exactly as serve does,
// and answers every route its HTTP server registers; nothing is started and everything is
// closed before it returns. specs/apidoc compares them with the OpenAPI document, so a route
// added to any API package without documenting it fails there.
func RegisteredRoutes(ctx context.Context, cfg Config) (_ []Route, err error) {
	log := zap.NewNop()
	s, err := resolveSecrets(cfg, log, io.Discard)
	if err != nil {
		return nil, err
	}
	db, err := openDatabase(ctx, cfg, log, nil)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, db.close()) }()
	svc, cleanup, err := buildServices(ctx, graphInput{Config: cfg, Secrets: s, Pool: db.pool,
		AdmissionPool: db.admission, LookupPool: db.lookup, ReadPool: db.reads, Log: log, Metrics: telemetry.NewMetrics()})
	if err != nil {
		return nil, fmt.Errorf("build services: %w", err)
	}
	defer cleanup()
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0"}, zap.NewNop(),
		func(context.Context) error { return nil }, http.NotFoundHandler(), svc.registrars...)
	if err != nil {
		return nil, err
	}
	var out []Route
	for _, r := range srv.Routes() {
		out = append(out, Route{Method: r.Method, Path: r.Path})
	}
	return out, nil
}

// routeRegistration mounts one part's routes; each part provides it under its own named type,
// so Wire can tell them apart.
type routeRegistration = server.Registrar
