package domain

import (
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/internal/heavy"
	"github.com/hephaestus-dev/hephaestus/internal/jsonscan"
	"github.com/jackc/pgx/v5"
)

var _ = time.Now
var _ inbox.State
var _ pgx.Tx
var _ heavy.T
var _ jsonscan.Rules
