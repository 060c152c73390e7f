package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres"
)

// The benchmark's one workspace monitors one repository through one GitHub App installation.
const (
	installationID = 4242
	repositoryID   = 1296269
	organizationID = 9919
	payloadBytes   = 2048
)

func migrate(ctx context.Context, dbURL string) error {
	_, err := postgres.Migrate(ctx, dbURL)
	return err
}

// seedBenchRoute seeds the route of every row into the benchmark database.
func seedBenchRoute(ctx context.Context, dbURL string) error {
	pool, err := openPool(ctx, dbURL, 1)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := seedRoute(ctx, pool); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

// seedRoute creates the workspace, its App connection and its subscription.
func seedRoute(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `
WITH w AS (INSERT INTO workspace (slug, name) VALUES ('bench', 'Bench') RETURNING id),
     c AS (INSERT INTO connection (workspace_id, kind, provider, source_server_url, config, source_key)
           SELECT id, 'GITHUB_APP', 'GITHUB', 'https://github.com', '{"installationId": 4242}', '4242' FROM w
           RETURNING id, workspace_id)
INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id, name)
SELECT id, workspace_id, 'GITHUB', 'repository', '1296269', 'octo/hello' FROM c`)
	return err
}

// issuePayload is a real-shaped `issues` delivery of about payloadBytes bytes: the issue body
// pads it, as long issue bodies do.
func issuePayload(n int) []byte {
	doc := map[string]any{
		"action": "edited",
		"issue": map[string]any{
			"id": 1000000 + n, "number": n, "title": fmt.Sprintf("Issue %d", n), "state": "open",
			"user":       map[string]any{"login": "octocat", "id": 583231, "type": "User"},
			"updated_at": "2026-11-30T12:00:00Z", "body": "",
		},
		"repository": map[string]any{
			"id": repositoryID, "name": "hello", "full_name": "octo/hello", "private": false,
			"owner": map[string]any{"login": "octo", "id": organizationID, "type": "Organization"},
		},
		"organization": map[string]any{"login": "octo", "id": organizationID},
		"sender":       map[string]any{"login": "octocat", "id": 583231, "type": "User"},
		"installation": map[string]any{"id": installationID, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI0Mg=="},
	}
	b, _ := json.Marshal(doc)
	pad := payloadBytes - len(b)
	if pad < 0 {
		pad = 0
	}
	doc["issue"].(map[string]any)["body"] = strings.Repeat("x", pad)
	b, _ = json.Marshal(doc)
	return b
}
