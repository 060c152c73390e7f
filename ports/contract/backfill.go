package contract

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// SyncSource is a provider's side of sync jobs (adapters/<provider>/…sync): it reads one page
// of a job's resource from the provider, outside any transaction, and maps it to mirror
// writes. A teardown job's one page deletes what only the connection brought into the
// workspace. Errors: *inbox.ProviderError (classified by the inbox's failure table), or a
// database error of a read.
type SyncSource interface {
	Provider() provider.Provider
	NextPage(ctx context.Context, job ports.SyncJob, cursor string) (ports.SyncPage, error)
}
