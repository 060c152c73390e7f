package providersuite

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// Uninstall moves the connection conn to UNINSTALLED, then runs teardown in a transaction of
// its own as the teardown job does (after the transition committed), and commits it.
func Uninstall(ctx context.Context, pool *pgxpool.Pool, conn int64, teardown func(ctx context.Context, tx ports.Tx) error) {
	ginkgo.GinkgoHelper()
	_, err := pool.Exec(ctx, `UPDATE connection SET state = 'UNINSTALLED', updated_at = now() WHERE id = $1`, conn)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	tx, err := pool.Begin(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	adopted := sqlkit.Adopt(tx)
	gomega.Expect(teardown(ctx, adopted)).To(gomega.Succeed())
	gomega.Expect(tx.Commit(ctx)).To(gomega.Succeed())
	sqlkit.Committed(adopted)
}

// Connection stores an ACTIVE connection of workspace ws of the provider's kind with source,
// routing key (sourceKey, "" for none) and config (a JSON object), subscribed to each resource
// (type and id pairs), and returns its id.
func Connection(ctx context.Context, pool *pgxpool.Pool, ws int64, provider, kind, source, sourceKey, config string, resources ...string) int64 {
	ginkgo.GinkgoHelper()
	var id int64
	gomega.Expect(pool.QueryRow(ctx, `
		INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config, source_key)
		VALUES ($1, $2, $3, 'ACTIVE', $4, $5::jsonb, NULLIF($6, '')) RETURNING id`,
		ws, kind, provider, source, config, sourceKey).Scan(&id)).To(gomega.Succeed())
	for i := 0; i+1 < len(resources); i += 2 {
		_, err := pool.Exec(ctx, `
			INSERT INTO connection_subscription (connection_id, workspace_id, provider, resource_type, resource_id)
			VALUES ($1, $2, $3, $4, $5)`, id, ws, provider, resources[i], resources[i+1])
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
	}
	return id
}

// Headers is an http.Header of name and value pairs.
func Headers(pairs ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(pairs); i += 2 {
		h.Set(pairs[i], pairs[i+1])
	}
	return h
}

// Unix is t's seconds as the decimal text signature timestamps carry.
func Unix(seconds int64) string { return strconv.FormatInt(seconds, 10) }

// Sign is the HMAC-SHA256 of parts, in order, under good's key when signed and under another
// key of the same length otherwise: how a fixture signs a request well or wrongly.
func Sign(good []byte, signed bool, parts ...[]byte) []byte {
	key := slices.Clone(good)
	if !signed {
		for i := range key {
			key[i] ^= 0x5a
		}
	}
	mac := hmac.New(sha256.New, key)
	for _, p := range parts {
		mac.Write(p)
	}
	return mac.Sum(nil)
}
