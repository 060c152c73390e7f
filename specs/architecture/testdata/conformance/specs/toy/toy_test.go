package toy_test

import "github.com/hephaestus-dev/hephaestus/specs/providersuite"

var _ = providersuite.Run(providersuite.Fixture{Name: "Toy", Package: "toy"})
