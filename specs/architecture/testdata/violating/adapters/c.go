package adapters

import "github.com/hephaestus-dev/hephaestus/client/hxapi"

var _ = hxapi.NewClient
