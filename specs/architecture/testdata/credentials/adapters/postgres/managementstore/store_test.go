package managementstore

import "github.com/hephaestus-dev/hephaestus/ports/credential"

// Even the store's specs do not claim it (the store has claimed it already).
var _ = credential.ClaimIssuer
