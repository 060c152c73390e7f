package architecture_test

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/architecture"
)

var _ = Describe("Godoc of the domain and the ports", func() {
	It("documents every exported identifier", func() {
		root, _, err := architecture.FindModule(".")
		Expect(err).NotTo(HaveOccurred())
		for _, dir := range []string{"domain", "ports"} {
			bare, err := architecture.UndocumentedIn(root, dir)
			Expect(err).NotTo(HaveOccurred())
			lines := make([]string, len(bare))
			for i, b := range bare {
				lines[i] = b.String()
			}
			Expect(bare).To(BeEmpty(), "exported identifiers without a doc comment:\n%s", strings.Join(lines, "\n"))
		}
	})

	It("finds the undocumented type, method, constant and function of a fixture, and no documented or unexported one", func() {
		bare, err := architecture.UndocumentedIn(filepath.Join("testdata", "godoc"), "domain")
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, b := range bare {
			names = append(names, b.Name)
		}
		Expect(names).To(Equal([]string{"Bare", "Documented.IsZero", "Loose", "Exported"}))
	})
})
