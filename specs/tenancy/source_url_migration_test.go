package tenancy_test

import (
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Migrating source server URLs to their canonical form (migration 00045)", Ordered, func() {
	var (
		migrated *pgxpool.Pool
		notices  func() []string
	)

	BeforeAll(func(ctx SpecContext) {
		m := support.MigrateFrom(ctx, 44, `
			INSERT INTO workspace (slug, name) VALUES ('acme', 'acme'), ('globex', 'globex');
			INSERT INTO connection (id, workspace_id, kind, provider, source_server_url, config, source_key)
			OVERRIDING SYSTEM VALUE VALUES
			  (1, 1, 'GITHUB_APP', 'GITHUB', 'https://GitHub.com:443/', '{"installationId":1001}', '1001'),
			  (2, 2, 'GITHUB_PAT', 'GITHUB', 'https://github.com', '{"login":"ana"}', NULL),
			  (3, 2, 'GITLAB', 'GITLAB', 'HTTP://GitLab.Example.com:80/group/', '{"groupId":42}', NULL),
			  (4, 1, 'OUTLINE', 'OUTLINE', 'https://docs.example.com:8443', '{}', NULL);
			INSERT INTO inbox_erasure (provider, source_server_url, identities, requested_by)
			VALUES ('GITHUB', 'https://github.com/', '[{"login":"octocat"}]', 0)`)
		migrated, notices = m.Pool, m.Notices
	})

	It("stores every connection's and erasure request's URL canonical, and reports the connections it rewrote", func(ctx SpecContext) {
		Expect(support.Column(ctx, migrated, `SELECT id || ' ' || source_server_url FROM connection ORDER BY id`)).To(Equal([]string{
			"1 https://github.com", "2 https://github.com", "3 http://gitlab.example.com/group", "4 https://docs.example.com:8443",
		}))
		Expect(support.Column(ctx, migrated, `SELECT source_server_url FROM inbox_erasure`)).To(Equal([]string{"https://github.com"}))
		Expect(notices()).To(ConsistOf(
			ContainSubstring("connection 1: source server url stored canonical (1 other connection(s) already had it)"),
			ContainSubstring("connection 3: source server url stored canonical (0 other connection(s) already had it)"),
		))
	})

	It("canonicalises in SQL as domain/provider.CanonicalServerURL does in Go", func(ctx SpecContext) {
		for _, raw := range []string{
			"https://github.com", "https://GitHub.com:443/", "HTTPS://GITHUB.COM//", "http://h.example:80", "http://h.example:443/",
			"https://h.example:80/", "https://ghe.example:08443/api/v3/", "https://ghe.example/A/B/", "https://[FE80::1]:443/",
			"http://[::1]:8080/x/", "https://127.0.0.1:8443", "https://outline.example/a%2Fb/", "https://a-b_c~d.example/~x/",
		} {
			want, err := provider.CanonicalServerURL(raw)
			Expect(err).NotTo(HaveOccurred(), raw)
			Expect(support.Scalar[string](ctx, migrated, `SELECT canonical_source_url($1)`, raw)).To(Equal(want), raw)
		}
	})
})
