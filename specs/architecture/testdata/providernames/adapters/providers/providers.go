package providers

import _ "github.com/hephaestus-dev/hephaestus/adapters/toy/toymodule"

// The list of provider modules names the providers: allowed.
const first = "toy"
