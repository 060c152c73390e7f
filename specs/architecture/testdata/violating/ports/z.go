package ports

import (
	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

var _ *zap.Logger
var _ inbox.State
