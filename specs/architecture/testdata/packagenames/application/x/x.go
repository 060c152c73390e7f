package x

import (
	astore "github.com/hephaestus-dev/hephaestus/adapters/a/store"
	_ "github.com/hephaestus-dev/hephaestus/adapters/b/store"
	other "github.com/example/other"
)

var _, _ = astore.X, other.Y
