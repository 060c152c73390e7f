package architecture_test

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackread"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/architecture"
)

var _ = Describe("Person fields of the read API and change-feed views", func() {
	declared := map[string]func() (ports.PersonFields, error){
		"github": githubread.PersonFields, "gitlab": gitlabread.PersonFields,
		"slack": slackread.PersonFields, "outline": outlineread.PersonFields,
	}

	It("are declared for every provider: each member that sounds like a person carries a person tag", func() {
		root, _, err := architecture.FindModule(".")
		Expect(err).NotTo(HaveOccurred())
		providers, err := architecture.Providers(root)
		Expect(err).NotTo(HaveOccurred())
		for _, p := range providers {
			Expect(declared).To(HaveKey(p), "a provider with a read API declares its person fields through it")
			fields, err := architecture.ViewFields(root, p)
			Expect(err).NotTo(HaveOccurred())
			Expect(fields).NotTo(BeEmpty(), p)
			missing := architecture.UndeclaredPersonFields(fields)
			lines := make([]string, len(missing))
			for i, m := range missing {
				lines[i] = m.String()
			}
			Expect(missing).To(BeEmpty(), "undeclared person fields:\n%s", strings.Join(lines, "\n"))
		}
	})

	It("reach person erasure: every tagged member is in the provider's declaration, so the change feed is scrubbed by it", func() {
		root, _, err := architecture.FindModule(".")
		Expect(err).NotTo(HaveOccurred())
		for p, fieldsOf := range declared {
			f, err := fieldsOf()
			Expect(err).NotTo(HaveOccurred())
			Expect(f.Views).NotTo(BeNil(), p)
			views, err := architecture.ViewFields(root, p)
			Expect(err).NotTo(HaveOccurred())
			for _, v := range views {
				switch v.Person {
				case "id":
					Expect(f.Views.IDs).To(ContainElement(v.Member), v.File)
				case "login":
					Expect(f.Views.Logins).To(ContainElement(v.Member), v.File)
				case "email":
					Expect(f.Views.Emails).To(ContainElement(v.Member), v.File)
				case "name":
					Expect(f.Views.Names).To(ContainElement(v.Member), v.File)
				case "", "-":
				default:
					Fail("unknown person tag " + v.Person + " at " + v.File)
				}
			}
		}
	})

	It("reports a view member that sounds like a person and is not declared", func() {
		fields, err := architecture.ViewFields(filepath.Join("testdata", "personviews"), "toy")
		Expect(err).NotTo(HaveOccurred())
		var members []string
		for _, f := range architecture.UndeclaredPersonFields(fields) {
			members = append(members, f.Member)
		}
		Expect(members).To(Equal([]string{"userId", "reviewer"}))
	})
})
