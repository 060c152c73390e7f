package x

import (
	other "github.com/example/other"
	astore "github.com/hephaestus-dev/hephaestus/adapters/a/store"
	_ "github.com/hephaestus-dev/hephaestus/adapters/b/store"
)

var _, _ = astore.X, other.Y
