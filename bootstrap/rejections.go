//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"github.com/google/wire"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/rejectionstore"
	"github.com/hephaestus-dev/hephaestus/application/rejections"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// rejectionSet is the rejection log: admission counts refusals in memory (provideAdmissionConfig),
// the log's runner adds them to their minutes' rows every few seconds, the operator API reads it.
var rejectionSet = wire.NewSet(
	rejectionstore.New,
	wire.Bind(new(ports.RejectionStore), new(*rejectionstore.Store)),
	provideRejectionLog,
	provideRejectionReads,
)

// provideRejectionReads lists the log on the operator read pool (operatorReadPool); the log's
// runner writes through the main pool's store.
func provideRejectionReads(pool operatorReadPool) (*rejections.Service, error) {
	store, err := rejectionstore.New(pool.Pool)
	if err != nil {
		return nil, err
	}
	return rejections.NewService(store)
}

// provideRejectionLog keeps HEPHAESTUS_REJECTIONS_RETENTION of the log.
func provideRejectionLog(cfg Config, store ports.RejectionStore, clock ports.Clock, log ports.Logger) (*rejections.Log, error) {
	return rejections.New(rejections.Config{Retention: cfg.RejectionsRetention}, store, clock, log)
}
