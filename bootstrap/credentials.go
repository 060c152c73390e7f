package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
)

// RotateCredentials re-seals every connection secret that is not sealed under the first key of
// HEPHAESTUS_CREDENTIALS_KEY in the current form (`hephaestus rotate-credentials`), while the
// servers keep running. Rotating a key: add the new key at the end of every server's list and
// roll them out (all open with it); put it first everywhere and roll out (new secrets are
// sealed with it); run this command; then drop the old key. Legacy values (sealed before key
// ids) are re-sealed too while the legacy fallback is open; when every secret was re-sealed
// without a failure, the command closes the fallback for good: from then on no server opens a
// value in the legacy form (one planted later, or restored from an old backup, stays shut and
// is counted at start). Errors: a secret no configured key opens (the others are re-sealed,
// and the fallback stays open), the database.
func RotateCredentials(ctx context.Context, cfg Config, log *zap.Logger, console io.Writer) (_ managementstore.ResealResult, err error) {
	srv, err := startServer(ctx, cfg, log, false)
	if err != nil {
		return managementstore.ResealResult{}, err
	}
	defer func() { err = errors.Join(err, srv.close()) }()
	secrets, err := resolveSecrets(cfg, log, console)
	if err != nil {
		return managementstore.ResealResult{}, err
	}
	pcfg, err := pgxpool.ParseConfig(srv.url)
	if err != nil {
		return managementstore.ResealResult{}, fmt.Errorf("parse database URL: %w", err)
	}
	pcfg.MaxConns = 2
	pcfg.ConnConfig.RuntimeParams["application_name"] = "hephaestus rotate-credentials"
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return managementstore.ResealResult{}, fmt.Errorf("open database pool: %w", err)
	}
	defer pool.Close()
	if err := waitForDatabase(ctx, pool, log, nil); err != nil {
		return managementstore.ResealResult{}, err
	}
	fallback, err := managementstore.NewLegacyFallback(pool)
	if err != nil {
		return managementstore.ResealResult{}, err
	}
	box, err := gatedSecretBox(secrets, fallback)
	if err != nil {
		return managementstore.ResealResult{}, err
	}
	res, closed, err := managementstore.RotateSecrets(ctx, pool, box, fallback)
	log.Info("rotated connection secrets", zap.Int("checked", res.Checked), zap.Int("resealed", res.Resealed),
		zap.Int("legacyLeft", res.Legacy))
	if closed {
		log.Info("closed the legacy credentials fallback: values sealed before key ids no longer open")
	}
	return res, err
}

// migrateLegacySecrets re-seals, at start, the connection secrets sealed before key ids and
// associated data existed, with this server's sealing key, while the legacy fallback is open.
// It touches nothing else (a server started with an older key list must not undo a rotation).
// It always says how many values remain in the legacy form, and whether they still open. A
// failure is logged and the server starts anyway: legacy values still open (while the fallback
// is), and the next start or `hephaestus rotate-credentials` finishes the migration.
func migrateLegacySecrets(ctx context.Context, pool *pgxpool.Pool, s instanceSecrets, log *zap.Logger) {
	box, err := provideSecretBox(s, pool)
	if err != nil {
		return // the service graph reports it
	}
	res, err := managementstore.ResealSecrets(ctx, pool, box, managementstore.ResealLegacy)
	if err != nil {
		log.Warn("connection secrets sealed before key ids were not all migrated; they still open",
			zap.Int("resealed", res.Resealed), zap.Error(err))
	} else if res.Resealed > 0 {
		log.Info("migrated connection secrets to key ids and associated data", zap.Int("resealed", res.Resealed))
	}
	opens := box.LegacyOpens()
	fields := []zap.Field{zap.Int("remaining", res.Legacy), zap.Bool("fallbackOpen", opens)}
	switch {
	case res.Legacy > 0:
		log.Warn("connection secrets sealed before key ids remain and no longer open (the legacy fallback is closed): set those connections' secrets again", fields...)
	case opens:
		log.Info("connection secrets sealed before key ids: none remain; run `hephaestus rotate-credentials` to stop opening that form for good", fields...)
	default:
		log.Info("connection secrets sealed before key ids: none remain, and that form no longer opens", fields...)
	}
}
