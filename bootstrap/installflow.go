//lint:file-ignore U1000 the Wire sets here are used by wire.go, which builds only with the wireinject tag.

package bootstrap

import (
	"crypto/hmac"
	"crypto/sha256"

	"github.com/gin-gonic/gin"
	"github.com/google/wire"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githuboauth"
	"github.com/hephaestus-dev/hephaestus/adapters/http/installapi"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackoauth"
	"github.com/hephaestus-dev/hephaestus/application/installflow"
	"github.com/hephaestus-dev/hephaestus/application/management"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// installFlowSet is the GitHub App and Slack install flows and their routes.
var installFlowSet = wire.NewSet(
	managementstore.NewInstallStates,
	wire.Bind(new(ports.InstallStateStore), new(*managementstore.InstallStates)),
	provideGitHubInstallAuthority,
	provideSlackInstallAuthority,
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

// provideGitHubInstallAuthority is GitHub's OAuth side, or nil (flow off) without a client.
func provideGitHubInstallAuthority(cfg Config) (ports.GitHubInstallAuthority, error) {
	if cfg.GitHubClientID == "" || cfg.GitHubAppSlug == "" {
		return nil, nil
	}
	c, err := githuboauth.New(githuboauth.Config{APIURL: cfg.GitHubAPIURL, OAuthURL: cfg.GitHubOAuthURL,
		ClientID: cfg.GitHubClientID, ClientSecret: cfg.GitHubClientSecret})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// provideSlackInstallAuthority is Slack's OAuth side, or nil (flow off) without a client.
func provideSlackInstallAuthority(cfg Config) (ports.SlackInstallAuthority, error) {
	if cfg.SlackClientID == "" {
		return nil, nil
	}
	c, err := slackoauth.New(slackoauth.Config{APIURL: cfg.SlackAPIURL, ClientID: cfg.SlackClientID, ClientSecret: cfg.SlackClientSecret})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func provideInstallFlows(cfg Config, s instanceSecrets, mgmt *management.Service, states ports.InstallStateStore,
	gh ports.GitHubInstallAuthority, sl ports.SlackInstallAuthority, clock ports.Clock, log ports.Logger,
) (*installflow.Service, error) {
	return installflow.New(installflow.Config{
		StateKey:      installStateKey(s.CredentialsKey),
		GitHubWebURL:  cfg.GitHubOAuthURL,
		GitHubAppSlug: cfg.GitHubAppSlug,
		SlackClientID: cfg.SlackClientID,
		PublicURL:     cfg.PublicURL,
	}, mgmt, states, gh, sl, clock, log)
}

// installRoutes mounts the install flows' routes.
type installRoutes routeRegistration

func provideInstallRoutes(flows *installflow.Service, mgmt *management.Service) installRoutes {
	return func(r gin.IRouter) error {
		installapi.Register(r, flows, mgmt)
		return nil
	}
}
