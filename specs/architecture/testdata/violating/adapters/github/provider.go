package github

// A provider's root package that publishes changes through the engine's store.
import "github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"

var _ changefeed.Store
