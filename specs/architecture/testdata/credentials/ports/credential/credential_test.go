package credential_test

import "github.com/hephaestus-dev/hephaestus/ports/credential"

// The credential package's own spec claims it to prove that a second claim panics: allowed.
var _ = credential.ClaimIssuer
