package githubhandlers

import (
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = postgres.Migrate
var _ githubmirror.Store
var _ ports.Handler
