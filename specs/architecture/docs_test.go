package architecture_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/specs/architecture"
)

func findingLines(found []architecture.DocFinding) string {
	lines := make([]string, len(found))
	for i, f := range found {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// missingFrom lists the names of want that have is lacks.
func missingFrom(have, want []string) []string {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	var missing []string
	for _, w := range want {
		if !set[w] {
			missing = append(missing, w)
		}
	}
	return missing
}

var _ = Describe("The documentation", func() {
	var root string
	BeforeEach(func() {
		var err error
		root, _, err = architecture.FindModule(".")
		Expect(err).NotTo(HaveOccurred())
	})

	When("it is reference (README.md, ARCHITECTURE.md, docs/ but the history pages)", func() {
		It("states how things are: no issue number, date or session narrative", func() {
			pages, err := architecture.ReferencePages(root)
			Expect(err).NotTo(HaveOccurred())
			Expect(pages).To(ContainElements("README.md", "ARCHITECTURE.md", "docs/README.md"))
			found, err := architecture.HistoryIn(root, pages)
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeEmpty(), "history in reference text (move it to CHANGELOG.md or docs/performance-history.md):\n%s", findingLines(found))
		})
	})

	It("links only to files and headings that exist in the repository", func() {
		files, err := architecture.MarkdownFiles(root)
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(ContainElement("CHANGELOG.md"))
		found, err := architecture.BrokenLinksIn(root, files)
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeEmpty(), "links that lead nowhere in a clone:\n%s", findingLines(found))
	})

	It("keeps README.md and ARCHITECTURE.md short enough to read in one sitting", func() {
		for file, most := range map[string]int{"README.md": 220, "ARCHITECTURE.md": 550} {
			b, err := os.ReadFile(filepath.Join(root, file))
			Expect(err).NotTo(HaveOccurred())
			Expect(strings.Count(string(b), "\n")).To(BeNumerically("<=", most), file)
		}
	})

	When("it documents the configuration (docs/configuration.md, README.md)", func() {
		var page string
		var read []string
		BeforeEach(func() {
			b, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
			Expect(err).NotTo(HaveOccurred())
			page = string(b)
			read, err = architecture.ServerEnvNames(root)
			Expect(err).NotTo(HaveOccurred())
			Expect(read).To(ContainElements("DATABASE_URL", "HEPHAESTUS_ADMIN_TOKEN", "HEPHAESTUS_INTEGRATION_CONSUMER_CLAIMERS"),
				"the process settings, from bootstrap/")
			Expect(read).To(ContainElements("HEPHAESTUS_GITHUB_APP_ID", "HEPHAESTUS_GITLAB_API_URL", "HEPHAESTUS_SLACK_SIGNING_SECRET",
				"HEPHAESTUS_OUTLINE_API_URL"), "each provider module's, from its package")
		})

		It("reads the variables of the providers the module list names, not of a provider folder it does not list", func() {
			providers, err := architecture.Providers(root)
			Expect(err).NotTo(HaveOccurred())
			Expect(providers).To(ContainElement("beacon"), "the example provider's folder is found")
			listed, err := architecture.ListedProviders(root)
			Expect(err).NotTo(HaveOccurred())
			Expect(listed).To(Equal([]string{"github", "gitlab", "outline", "slack"}))
			Expect(read).NotTo(ContainElement("HEPHAESTUS_BEACON_MAX_TITLE_BYTES"))
		})

		It("names every variable bootstrap and the provider modules read", func() {
			Expect(missingFrom(architecture.EnvNamesMentioned(page), read)).To(BeEmpty(), "read by the server, not on docs/configuration.md")
		})

		It("names no variable the server does not read", func() {
			Expect(missingFrom(read, architecture.EnvNamesMentioned(page))).To(BeEmpty(), "on docs/configuration.md, not read by the server")
		})

		It("keeps README.md's essential settings to variables the server reads", func() {
			b, err := os.ReadFile(filepath.Join(root, "README.md"))
			Expect(err).NotTo(HaveOccurred())
			named := architecture.EnvNamesMentioned(string(b))
			Expect(named).To(ContainElements("DATABASE_URL", "HEPHAESTUS_GITHUB_WEBHOOK_SECRET"))
			Expect(missingFrom(read, named)).To(BeEmpty(), "on README.md, not read by the server")
			short := architecture.SettingRows(string(b))
			Expect(short).To(HaveKeyWithValue("HEPHAESTUS_HTTP_ADDR", ContainSubstring("`:8080`")))
			Expect(architecture.DefaultDisagreements(short, architecture.SettingRows(page))).To(BeEmpty(),
				"README.md's defaults, against docs/configuration.md's")
		})

		It("has each provider module's Config say, field by field, its variable and its default", func() {
			dirs, err := architecture.ConfigDirs(root)
			Expect(err).NotTo(HaveOccurred())
			Expect(len(dirs)).To(BeNumerically(">=", 5), "bootstrap and four provider modules")
			for _, dir := range dirs[1:] {
				found, err := architecture.ConfigFieldFindings(dir)
				Expect(err).NotTo(HaveOccurred())
				Expect(found).To(BeEmpty(), dir)
			}
		})
	})

	Describe("the checks themselves, on a fixture", func() {
		fixture := filepath.Join("testdata", "docs")

		It("finds issue numbers, issue references, dates and session narrative outside code, and nothing in the history pages", func() {
			pages, err := architecture.ReferencePages(fixture)
			Expect(err).NotTo(HaveOccurred())
			Expect(pages).To(Equal([]string{"README.md", "docs/topic/page.md"}))
			found, err := architecture.HistoryIn(fixture, pages)
			Expect(err).NotTo(HaveOccurred())
			Expect(findingLines(found)).To(Equal(strings.Join([]string{
				"README.md:3: issue 12 (an issue number)",
				"README.md:3: issues 31 (an issue number)",
				"README.md:3: #7 (an issue reference)",
				"README.md:4: 2026-12-03 (a date)",
				"README.md:4: this session (session narrative)",
			}, "\n")))
		})

		It("finds missing files, missing anchors and links out of the repository, in the changelog too", func() {
			files, err := architecture.MarkdownFiles(fixture)
			Expect(err).NotTo(HaveOccurred())
			found, err := architecture.BrokenLinksIn(fixture, files)
			Expect(err).NotTo(HaveOccurred())
			Expect(findingLines(found)).To(Equal(strings.Join([]string{
				"CHANGELOG.md:5: docs/gone.md (no such file in the repository)",
				"README.md:13: docs/nothing.md (no such file in the repository)",
				`README.md:13: docs/topic/page.md#nowhere (no heading "nowhere" in docs/topic/page.md)`,
				"README.md:13: ../shared/seed/x.txt (leads outside the repository)",
				"README.md:14: ../../README.md (leads outside the repository)",
			}, "\n")))
		})

		It("finds a module Config field without its variable or default, and a variable no field names", func() {
			found, err := architecture.ConfigFieldFindings(filepath.Join(fixture, "module"))
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(Equal([]string{
				"Config.Retries: its doc comment names no variable",
				"Config.Timeout: its doc comment states no default",
				"HEPHAESTUS_TOY_HIDDEN: read, but named by no Config field's doc comment",
			}))
		})

		It("finds a README default that the full settings table does not give", func() {
			short := architecture.SettingRows("| variable | default |\n|---|---|\n| `HEPHAESTUS_A`, `HEPHAESTUS_B` | `8` |\n| `HEPHAESTUS_C` | — |\n")
			full := architecture.SettingRows("| `HEPHAESTUS_A` | `8` (`make run`: `2`) | x |\n| `HEPHAESTUS_B` | `9` | y |\n| `HEPHAESTUS_C` | `1` | z |\n")
			Expect(architecture.DefaultDisagreements(short, full)).To(Equal([]string{`HEPHAESTUS_B: "8", the full table says "` + "`9`" + `"`}))
		})

		It("reads the variables from string constants, joined ones included, and not from tests", func() {
			names, err := architecture.EnvNamesIn(filepath.Join(fixture, "envs"))
			Expect(err).NotTo(HaveOccurred())
			Expect(names).To(Equal([]string{"DATABASE_URL", "HEPHAESTUS_HTTP_ADDR", "HEPHAESTUS_INTEGRATION_CONSUMER_CLAIMERS"}))
			Expect(architecture.EnvNamesMentioned("set `HEPHAESTUS_HTTP_ADDR` (and `HEPHAESTUS_INTEGRATION_CONSUMER_*`), or DATABASE_URL")).
				To(Equal([]string{"DATABASE_URL", "HEPHAESTUS_HTTP_ADDR"}))
		})
	})
})
