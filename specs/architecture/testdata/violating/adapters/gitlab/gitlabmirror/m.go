package gitlabmirror

import (
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/deliveryinbox"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
)

var _ deliveryinbox.Inbox
var _ = sqlkit.PgxTx
