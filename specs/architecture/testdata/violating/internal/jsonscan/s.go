package jsonscan

import (
	"unicode/utf8"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

var _ = utf8.Valid
var _ inbox.State
