package migrations

import (
	"embed"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

var _ embed.FS
var _ inbox.State
