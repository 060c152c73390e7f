package beaconmodule

import (
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/internal/envconfig"
)

// EnvMaxTitleBytes is the Beacon module's one environment variable. Beacon is the example
// provider, which the server does not run, so the variable is read only where a harness adds
// the module (specs/beacon); a real provider's variables are on docs/configuration.md.
const EnvMaxTitleBytes = "HEPHAESTUS_BEACON_MAX_TITLE_BYTES"

// DefaultMaxTitleBytes is MaxTitleBytes when its variable is unset.
const DefaultMaxTitleBytes = 200

// Config is the Beacon module's configuration, read by LoadConfig. Webhooks need none: each
// connection has its own URL and signing secret.
type Config struct {
	// MaxTitleBytes bounds the incident title the mirror keeps (HEPHAESTUS_BEACON_MAX_TITLE_BYTES,
	// 1 to 10000 bytes; a longer title is cut at a character boundary). Default: 200.
	MaxTitleBytes int
}

// LoadConfig reads the Beacon variable from env, applies its default and validates it.
// Errors: an *envconfig.Error naming the invalid variable (then the Config is not to be used).
func LoadConfig(env providerkit.Env) (Config, error) {
	r := envconfig.NewReader(env.Getenv)
	c := Config{MaxTitleBytes: int(r.WholeNumber(EnvMaxTitleBytes, DefaultMaxTitleBytes, 1, 10_000))}
	return c, r.Err()
}
