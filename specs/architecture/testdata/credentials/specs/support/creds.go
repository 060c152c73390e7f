package support

import "github.com/hephaestus-dev/hephaestus/ports/credential"

// A spec helper that claims the issuer: specs get SpecCredential, never the issuer.
func Forge() credential.Credential { return credential.ClaimIssuer().Issue(1, 1, []byte("x")) }
