package other_test

import "github.com/hephaestus-dev/hephaestus/specs/providersuite"

// It runs the suite for another provider's folder, not its own.
var _ = providersuite.Run(providersuite.Fixture{Name: "Other", Package: "toy"})
