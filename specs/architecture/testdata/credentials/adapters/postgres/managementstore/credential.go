package managementstore

import "github.com/hephaestus-dev/hephaestus/ports/credential"

// The connection store claims the issuer: allowed.
var issuer credential.Issuer = credential.ClaimIssuer()
