package adapters

import (
	"github.com/hephaestus-dev/hephaestus/adapters/postgres"
	"github.com/hephaestus-dev/hephaestus/bootstrap"
)

var _ = bootstrap.LoadConfig
var _ = postgres.Migrate
