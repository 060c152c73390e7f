package bootstrap

import _ "github.com/hephaestus-dev/hephaestus/adapters/toy/toymodule"

// The composition root lists the providers: allowed.
const first = "toy"
