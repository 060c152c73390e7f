package module

const (
	EnvURL     = "HEPHAESTUS_TOY_URL"
	EnvTimeout = "HEPHAESTUS_TOY_TIMEOUT"
	EnvHidden  = "HEPHAESTUS_TOY_HIDDEN"
)

// Config is a module's configuration.
type Config struct {
	// URL is the API root (HEPHAESTUS_TOY_URL). Default: empty, no reads.
	URL string
	// Timeout bounds a call (HEPHAESTUS_TOY_TIMEOUT).
	Timeout int
	// Retries is how often a call is tried. Default: 3.
	Retries int
}
