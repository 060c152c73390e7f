package main

import (
	"encoding/base64"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodule"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/inboxstore"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/telemetry"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
)

// servedRegistry is the handler registry of the bench's serve child (serveEnv) built on pool:
// the four provider modules as bootstrap lists and builds them (providerModules,
// provideProviders), with the serve child's webhook and signing secrets, its credentials key,
// no App key, and provider API roots on a closed loopback port. Each mirror publishes to the
// change feed (without the in-process wake, which sends nothing to the database) and the
// handlers write through the PostgreSQL delivery inbox, so a handler runs here the statements
// it runs in the server.
func servedRegistry(pool *pgxpool.Pool) (*consumer.Registry, error) {
	const closed = "http://127.0.0.1:9"
	modules := []providerkit.Module{
		githubmodule.New(githubmodule.Config{WebhookSecret: webhookSecret, APIURL: closed, WebURL: closed}),
		gitlabmodule.New(gitlabmodule.Config{APIURL: closed}),
		slackmodule.New(slackmodule.Config{SigningSecret: slackSigningSecret, APIURL: closed}),
		outlinemodule.New(outlinemodule.Config{APIURL: closed}),
	}
	var kinds []connection.Kind
	for _, m := range modules {
		kinds = append(kinds, m.Kinds()...)
	}
	key, err := base64.StdEncoding.DecodeString(benchCredentialsKey)
	if err != nil {
		return nil, err
	}
	box, err := secrets.NewAESGCM(key)
	if err != nil {
		return nil, err
	}
	dinbox, err := deliveryinbox.New(pool)
	if err != nil {
		return nil, err
	}
	feed, err := changefeed.New(pool, nil)
	if err != nil {
		return nil, err
	}
	conns, err := managementstore.NewConnections(pool, managementstore.Config{Kinds: kinds})
	if err != nil {
		return nil, err
	}
	live, err := managementstore.NewLiveSecrets(pool, box)
	if err != nil {
		return nil, err
	}
	lease, err := inboxstore.New(pool, inboxstore.Config{})
	if err != nil {
		return nil, err
	}
	deps := providerkit.Deps{Owner: "bench", Pool: pool, Inbox: dinbox, Changes: feed, Connections: conns,
		Secrets: live, Lease: lease, Counter: func(string) (func(), error) { return func() {}, nil },
		Log: telemetry.NewTraceLogger(zap.NewNop())}
	reg := consumer.NewRegistry()
	for _, m := range modules {
		p, err := m.Build(deps)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", m.Provider().Label(), err)
		}
		if err := p.RegisterHandlers(reg); err != nil {
			return nil, fmt.Errorf("register %s handlers: %w", m.Provider().Label(), err)
		}
	}
	return reg, nil
}
