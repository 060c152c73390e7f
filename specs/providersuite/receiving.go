package providersuite

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/specs/architecture"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// notItsShape are bodies no provider can store: not JSON, JSON that is not an object, an
// object cut short. They reach Parse only after Verify, and admission refuses bodies that are
// not JSON before Parse; a provider's parser refuses them still (its fuzz target's rule).
var notItsShape = []string{`{"unterminated":`, `[1,2]`, `null`, `"text"`, `not json at all`}

// reasonOf is the reason of a *ports.RejectedError of kind, failing the spec for another error.
func reasonOf(err error, kind error) string {
	ginkgo.GinkgoHelper()
	var rej *ports.RejectedError
	gomega.Expect(errors.As(err, &rej)).To(gomega.BeTrue(), "a *ports.RejectedError, not %#v", err)
	gomega.Expect(err).To(gomega.MatchError(kind))
	gomega.Expect(rej.Reason).NotTo(gomega.BeEmpty())
	return rej.Reason
}

func receiving(f Fixture) {
	ginkgo.Describe("receiving", ginkgo.Label(support.NoDatabase), func() {
		var declared []string
		ginkgo.BeforeEach(func() { declared = f.Reasons.RejectionReasons() })

		ginkgo.It("refuses a wrongly signed delivery as unauthenticated, with a declared reason, whatever its body holds", func() {
			for _, body := range append([]string{string(f.Body), ""}, notItsShape...) {
				err := f.Webhook.Verify(f.Request([]byte(body), false), f.Connection)
				gomega.Expect(err).To(gomega.HaveOccurred(), "a body signed with another secret: %q", body)
				gomega.Expect(declared).To(gomega.ContainElement(reasonOf(err, ports.ErrUnauthenticated)), "body %q", body)
			}
		})

		ginkgo.It("verifies a correctly signed delivery without looking at its body, and parses the good one into an envelope to store", func() {
			for _, body := range append([]string{string(f.Body)}, notItsShape...) {
				gomega.Expect(f.Webhook.Verify(f.Request([]byte(body), true), f.Connection)).To(gomega.Succeed(), "body %q", body)
			}
			env, err := f.Webhook.Parse(f.Request(f.Body, true), f.Connection)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(env.DeliveryKey).NotTo(gomega.BeEmpty())
			gomega.Expect(env.EventType).NotTo(gomega.BeEmpty())
			gomega.Expect(env.DropReason).To(gomega.BeEmpty())
			gomega.Expect(env.Immediate).To(gomega.BeNil())
		})

		ginkgo.It("refuses a correctly signed body that is not JSON of its shape as malformed, with a declared reason", func() {
			for _, body := range notItsShape {
				_, err := f.Webhook.Parse(f.Request([]byte(body), true), f.Connection)
				gomega.Expect(err).To(gomega.HaveOccurred(), "body %q", body)
				gomega.Expect(declared).To(gomega.ContainElement(reasonOf(err, ports.ErrMalformed)), "body %q", body)
			}
		})

		ginkgo.It("declares each reason once, as a short kebab-case name", func() {
			seen := map[string]bool{}
			for _, r := range declared {
				gomega.Expect(r).To(gomega.MatchRegexp(`^[a-z0-9]+(-[a-z0-9]+)*$`))
				gomega.Expect(seen).NotTo(gomega.HaveKey(r), "declared twice")
				seen[r] = true
			}
		})

		ginkgo.It("keeps fuzz seeds for Parse and Verify in its testdata", func() {
			root, _, err := architecture.FindModule(".")
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			dir := filepath.Join(root, "adapters", f.Package)
			src, err := os.ReadFile(filepath.Join(dir, "fuzz_test.go"))
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			for _, target := range []string{"FuzzParse", "FuzzVerify"} {
				gomega.Expect(string(src)).To(gomega.ContainSubstring("func "+target+"(f *testing.F)"), "the fuzz target")
				seeds, err := os.ReadDir(filepath.Join(dir, "testdata", "fuzz", target))
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "seeds of "+target)
				gomega.Expect(seeds).NotTo(gomega.BeEmpty(), "seeds of "+target)
				for _, s := range seeds {
					raw, err := os.ReadFile(filepath.Join(dir, "testdata", "fuzz", target, s.Name()))
					gomega.Expect(err).NotTo(gomega.HaveOccurred())
					gomega.Expect(strings.HasPrefix(string(raw), "go test fuzz v1\n")).To(gomega.BeTrue(), "%s/%s is a corpus file", target, s.Name())
				}
			}
		})
	})
}

func personViews(f Fixture) {
	ginkgo.Describe("person fields of its read API and change-feed views", ginkgo.Label(support.NoDatabase), func() {
		ginkgo.It("tags each view member that sounds like a person", func() {
			root, _, err := architecture.FindModule(".")
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			fields, err := architecture.ViewFields(root, f.Package)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(fields).NotTo(gomega.BeEmpty())
			missing := architecture.UndeclaredPersonFields(fields)
			lines := make([]string, len(missing))
			for i, m := range missing {
				lines[i] = m.String()
			}
			gomega.Expect(missing).To(gomega.BeEmpty(), "undeclared person fields:\n%s", strings.Join(lines, "\n"))
		})

		ginkgo.It("declares every tagged member to person erasure, so the change feed is scrubbed by it", func() {
			root, _, err := architecture.FindModule(".")
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			declared, err := f.PersonFields()
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(declared.Views).NotTo(gomega.BeNil())
			views, err := architecture.ViewFields(root, f.Package)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			for _, v := range views {
				switch v.Person {
				case "id":
					gomega.Expect(declared.Views.IDs).To(gomega.ContainElement(v.Member), v.File)
				case "login":
					gomega.Expect(declared.Views.Logins).To(gomega.ContainElement(v.Member), v.File)
				case "email":
					gomega.Expect(declared.Views.Emails).To(gomega.ContainElement(v.Member), v.File)
				case "name":
					gomega.Expect(declared.Views.Names).To(gomega.ContainElement(v.Member), v.File)
				case "", "-":
				default:
					ginkgo.Fail("unknown person tag " + v.Person + " at " + v.File)
				}
			}
		})
	})
}
