package handlers

import (
	"github.com/hephaestus-dev/hephaestus/adapters/postgres"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ = postgres.Migrate
var _ ports.Handler
