package tenancy_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Migrating existing GitLab subscriptions (migration 00040)", func() {
	It("makes the GitLab subscriptions stored unchecked UNVERIFIED, so they route and backfill nothing until the connection's API token verified them, and leaves other kinds alone", func(ctx SpecContext) {
		p := support.MigrateFrom(ctx, 32, `
			INSERT INTO workspace (slug, name) VALUES ('acme', 'acme'), ('globex', 'globex');
			INSERT INTO connection (id, workspace_id, kind, provider, source_server_url, config, secret_ciphertext, api_token_ciphertext, source_key)
			OVERRIDING SYSTEM VALUE VALUES
			  (1, 1, 'GITHUB_APP', 'GITHUB', 'https://github.com', '{"installationId":1001}', NULL, NULL, '1001'),
			  (2, 2, 'GITLAB', 'GITLAB', 'https://gitlab.example', '{"groupId":40}', '\x01', NULL, NULL),
			  (3, 2, 'GITLAB', 'GITLAB', 'https://gitlab.example', '{"groupId":41}', '\x01', '\x02', NULL);
			INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id) VALUES
			  (1, 1, 'GITHUB', 'repository', '500'), (2, 2, 'GITLAB', 'project', '7'), (3, 2, 'GITLAB', 'group', '41')`).Pool

		Expect(support.Column(ctx, p, `SELECT connection_id || ':' || access || ':' || coalesce(access_reason, '')
			FROM connection_subscription ORDER BY connection_id`)).To(Equal([]string{
			"1:VERIFIED:", "2:UNVERIFIED:api-token-missing", "3:UNVERIFIED:not-yet-verified",
		}))
	})
})
