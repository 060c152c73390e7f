package domain

import "go.uber.org/zap"

var _ *zap.Logger
