package githubapi

// A provider API client that takes the connection store for its credentials.
import "github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"

type Client struct{ Secrets *managementstore.LiveSecrets }
