//go:build wireinject

package bootstrap

import (
	"context"

	"github.com/google/wire"
	"go.uber.org/zap"
)

// InitializeApp builds the App: what exists before the database is up. Regenerate
// wire_gen.go with `go tool wire ./bootstrap/...` (make generate).
func InitializeApp(cfg Config, log *zap.Logger) (*App, error) {
	wire.Build(processSet)
	return nil, nil
}

// buildServices builds everything that needs the database, once App.Run opened it.
func buildServices(ctx context.Context, in graphInput) (*services, func(), error) {
	wire.Build(coreSet, inboxSet, handlerSet, managementSet, admissionSet, operatorSet, replaySet, rejectionSet, consoleSet, installFlowSet, changesSet, syncSet, providerSet, httpSet, newServices)
	return nil, nil, nil
}
