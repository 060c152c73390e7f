package domain

import (
	"time"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/jackc/pgx/v5"
)

var _ = time.Now
var _ inbox.State
var _ pgx.Tx
