package architecture_test

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/architecture"
)

var _ = Describe("Package names", func() {
	It("are unique across the module's importable packages, so no file imports one under an alias", func() {
		root, modulePath, err := architecture.FindModule(".")
		Expect(err).NotTo(HaveOccurred())
		clashes, err := architecture.CheckPackageNames(root, modulePath)
		Expect(err).NotTo(HaveOccurred())
		lines := make([]string, len(clashes))
		for i, c := range clashes {
			lines[i] = c.String()
		}
		Expect(clashes).To(BeEmpty(), "name clashes:\n%s", strings.Join(lines, "\n"))
	})

	It("reports a shared package name and an aliased module import, not a blank or third-party one", func() {
		clashes, err := architecture.CheckPackageNames(filepath.Join("testdata", "packagenames"), "github.com/hephaestus-dev/hephaestus")
		Expect(err).NotTo(HaveOccurred())
		var got []string
		for _, c := range clashes {
			got = append(got, c.String())
		}
		Expect(got).To(ConsistOf(
			"package name store is used by adapters/a/store, adapters/b/store",
			`application/x/x.go imports "github.com/hephaestus-dev/hephaestus/adapters/a/store" as astore`,
		))
	})
})
