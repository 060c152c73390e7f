package outlinemodule

import (
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/internal/envconfig"
)

// EnvAPIURL is the Outline module's one environment variable (docs/configuration.md).
const EnvAPIURL = "HEPHAESTUS_OUTLINE_API_URL"

// Config is the Outline instance configuration (CONTRACT.md "Configuration"), read by
// LoadConfig. Webhooks need none: each connection has its own URL and signing secret.
type Config struct {
	// APIURL is the API root of the one Outline instance the server may call
	// (HEPHAESTUS_OUTLINE_API_URL, https://app.getoutline.com/api; no query or fragment).
	// Only connections whose sourceServerUrl is on that instance are backfilled, each with its
	// own API token. Default: empty, no backfill (its jobs are refused, teardown still runs).
	APIURL string
}

// LoadConfig reads the Outline variable from env and validates it (unset is off, so there is
// no default to fill). Errors: an *envconfig.Error naming the invalid variable (then
// the Config is not to be used).
func LoadConfig(env providerkit.Env) (Config, error) {
	r := envconfig.NewReader(env.Getenv)
	c := Config{APIURL: r.APIRoot(EnvAPIURL)}
	return c, r.Err()
}
