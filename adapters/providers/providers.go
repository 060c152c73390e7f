// Package providers lists the provider modules the server runs, one line per provider: adding
// a provider is its folder under adapters/, one line here and its migration. bootstrap reads
// the list (LoadConfig makes each module from its own variables) and names no provider itself.
package providers

import (
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmodule"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemodule"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodule"
)

// Loaders are the modules' loaders, in the order the server builds the modules.
func Loaders() []providerkit.Loader {
	return []providerkit.Loader{
		providerkit.Load(githubmodule.LoadConfig, githubmodule.New),
		providerkit.Load(gitlabmodule.LoadConfig, gitlabmodule.New),
		providerkit.Load(slackmodule.LoadConfig, slackmodule.New),
		providerkit.Load(outlinemodule.LoadConfig, outlinemodule.New),
	}
}
