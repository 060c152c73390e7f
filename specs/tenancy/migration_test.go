package tenancy_test

import (
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Migrating existing data (migrations 00010 and 00011)", Ordered, func() {
	var (
		migrated *pgxpool.Pool
		notices  func() []string
	)

	BeforeAll(func(ctx SpecContext) {
		m := support.MigrateFrom(ctx, 9, `
			INSERT INTO workspace (slug, name) VALUES ('acme', 'acme'), ('globex', 'globex');
			INSERT INTO connection (id, workspace_id, kind, provider, source_server_url, config, secret_ciphertext, source_key, created_at)
			OVERRIDING SYSTEM VALUE VALUES
			  (1, 1, 'GITHUB_APP', 'GITHUB', 'https://github.com', '{"installationId":1001}', NULL, '1001', now()),
			  (2, 2, 'GITHUB_PAT', 'GITHUB', 'https://github.com', '{"login":"mallory"}', NULL, NULL, now()),
			  (3, 2, 'GITHUB_PAT', 'GITHUB', 'https://github.com', '{"login":"ana"}', '\x01', NULL, now()),
			  (4, 1, 'SLACK', 'SLACK', 'https://slack.com', '{"teamId":"T1"}', NULL, 'T1', now() - interval '1 day'),
			  (5, 2, 'SLACK', 'SLACK', 'https://slack.com', '{"teamId":"T1"}', NULL, 'T1', now()),
			  (6, 2, 'SLACK', 'SLACK', 'https://slack.com', '{"teamId":"T2"}', NULL, 'T2', now());
			INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id) VALUES
			  (1, 1, 'GITHUB', 'repository', '500'), (2, 2, 'GITHUB', 'repository', '500'),
			  (3, 2, 'GITHUB', 'repository', '501'), (4, 1, 'SLACK', 'channel', 'C1')`)
		migrated, notices = m.Pool, m.Notices
	})

	It("keeps PAT connections and their subscriptions, UNVERIFIED, so they stop receiving", func(ctx SpecContext) {
		Expect(support.Column(ctx, migrated, `SELECT connection_id || ':' || access || ':' || coalesce(access_reason, '')
			FROM connection_subscription ORDER BY connection_id`)).To(Equal([]string{
			"1:VERIFIED:", "2:UNVERIFIED:token-missing", "3:UNVERIFIED:not-yet-verified", "4:VERIFIED:",
		}))
	})

	It("keeps the newest live connection of a Slack team, uninstalls the others and reports them", func(ctx SpecContext) {
		Expect(support.Column(ctx, migrated, `SELECT id || ':' || state FROM connection WHERE kind = 'SLACK' ORDER BY id`)).
			To(Equal([]string{"4:UNINSTALLED", "5:ACTIVE", "6:ACTIVE"}))
		Expect(notices()).To(ConsistOf(ContainSubstring("duplicate live Slack connection 4 (workspace 1) of team T1: UNINSTALLED, connection 5 kept")))
	})
})
