//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"crypto/hmac"
	"crypto/sha256"

	"github.com/gin-gonic/gin"
	"github.com/google/wire"

	"github.com/hephaestus-dev/hephaestus/adapters/http/installapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/application/installflow"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// installFlowSet is the providers' install flows and their routes.
var installFlowSet = wire.NewSet(
	managementstore.NewInstallStates,
	wire.Bind(new(ports.InstallStateStore), new(*managementstore.InstallStates)),
	provideInstallFlows,
	provideInstallRoutes,
)

// installStateKey derives the key that signs install states from the credentials key, so
// every server sharing the database (and so the credentials key) verifies the others' states,
// and no further secret needs configuring. The label separates it from the encryption use.
func installStateKey(credentialsKey []byte) []byte {
	mac := hmac.New(sha256.New, credentialsKey)
	mac.Write([]byte("hephaestus install-flow state v1"))
	return mac.Sum(nil)
}

// provideInstallFlows runs the flows the provider modules bring (contract.InstallFlows).
func provideInstallFlows(s instanceSecrets, mgmt *management.Service, states ports.InstallStateStore,
	providers []contract.Provider, clock ports.Clock, log ports.Logger,
) (*installflow.Service, error) {
	var flows []contract.InstallFlow
	for _, p := range providers {
		if f, ok := p.(contract.InstallFlows); ok {
			flows = append(flows, f.InstallFlows()...)
		}
	}
	return installflow.New(installflow.Config{StateKey: installStateKey(s.CredentialsKey)}, mgmt, states, flows, clock, log)
}

// installRoutes mounts the install flows' routes.
type installRoutes routeRegistration

func provideInstallRoutes(cfg Config, flows *installflow.Service, mgmt *management.Service) installRoutes {
	return func(r gin.IRouter) error {
		installapi.Register(r, flows, mgmt, installapi.Config{SecureCookies: cfg.SecureCookies})
		return nil
	}
}
