package accounts_test

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	_ "github.com/jackc/pgx/v5/stdlib"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/http/managementapi"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

var _ = Describe("Migrating accounts to several tokens", func() {
	It("keeps every existing account's token working, with its hash moved into the token table", func(ctx SpecContext) {
		// Data of the schema before migration 00012 (one token_hash per account), migrated forward.
		p := support.MigrateFrom(ctx, 11, `
			INSERT INTO workspace (slug, name) VALUES ('acme', 'Acme');
			INSERT INTO account (login, token_hash) VALUES ('ana', sha256('hx_token-of-ana-before-the-migration'));
			INSERT INTO workspace_member (workspace_id, account_id, role) SELECT w.id, a.id, 'ADMIN' FROM workspace w, account a;
			INSERT INTO provider_event (workspace_id, provider, event_type, delivery_key, scope_key, subject, payload, state, ended_at, replayed_by, replayed_at)
			VALUES (NULL, 'GITHUB', 'installation', 'k1', 'system:installation', 's', '{}', 'DONE', now(), 0, now());
			INSERT INTO provider_event_replay_audit (event_id, account_id, replayed_at) VALUES (1, 0, now()), (1, 1, now());`).Pool
		svc, _ := support.Management(p, adminToken)
		engine := gin.New()
		managementapi.Register(engine, svc, support.Logger{})
		srv, client := support.Serve(engine)
		s := server{support.API{URL: srv.URL, Client: client}}
		Expect(s.status("/api/workspaces/acme/connections", "hx_token-of-ana-before-the-migration")).To(Equal(http.StatusOK))
		Expect(s.Call(http.MethodGet, "/api/admin/accounts/1/tokens", adminToken, nil).JSON["items"]).To(HaveLen(1))

		Expect(support.Column(context.Background(), p, `
			SELECT principal || coalesce(':' || account_id || ':' || account_login, '') FROM provider_event_replay_audit ORDER BY id`)).
			To(Equal([]string{"INSTANCE_ADMIN_TOKEN", "ACCOUNT:1:ana"}), "the administrator token's old account id 0 becomes its own principal")
		Expect(support.Count(ctx, p, `SELECT count(*) FROM provider_event WHERE replayed_by IS NULL AND replayed_by_admin_token`)).To(Equal(1))
	})
})
