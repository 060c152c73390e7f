package contract

import (
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ providerkit.Module
var _ ports.Tx
