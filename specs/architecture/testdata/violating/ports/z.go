package ports

import (
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ *zap.Logger
var _ inbox.State
var _ contract.Provider
