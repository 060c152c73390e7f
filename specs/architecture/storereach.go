package architecture

import (
	"path"
	"sort"
	"strings"
)

// Reach is a package of the engine's stores (adapters/postgres/…) that a package kept from them
// reaches through the imports of the module's own packages.
type Reach struct {
	From  string   // the package kept from the stores
	Chain []string // From, the packages in between, the store's package (one shortest chain)
}

func (r Reach) String() string {
	return r.From + " reaches " + r.Chain[len(r.Chain)-1] + ": " + strings.Join(r.Chain, " → ")
}

// StoreReach follows the imports of non-test files from every package kept from the engine's
// stores — each provider module (adapters/<provider>/<provider>module), the kit
// (adapters/providerkit) and every HTTP adapter (adapters/http/…) — through the packages of
// the module at moduleRoot, and reports each package under adapters/postgres one of them
// reaches, with one shortest chain. An import from one package to another for which skip
// returns true is not followed (nil: every import is). Directories are skipped as Check skips
// them.
func StoreReach(moduleRoot, modulePath string, skip func(from, to string) bool) ([]Reach, error) {
	providers, err := Providers(moduleRoot)
	if err != nil {
		return nil, err
	}
	// imports maps a package (its directory relative to the root) to the module packages its
	// non-test files import.
	imports := map[string]map[string]bool{}
	err = walkImports(moduleRoot, func(rel, imp string) {
		own, ok := strings.CutPrefix(imp, modulePath+"/")
		if !ok || strings.HasSuffix(rel, "_test.go") {
			return
		}
		from := path.Dir(rel)
		if imports[from] == nil {
			imports[from] = map[string]bool{}
		}
		imports[from][own] = true
	})
	if err != nil {
		return nil, err
	}
	var starts []string
	for _, p := range providers {
		starts = append(starts, "adapters/"+p+"/"+p+"module")
	}
	for pkg := range imports {
		if hasPrefix(pkg, "adapters/providerkit") || hasPrefix(pkg, "adapters/http") {
			starts = append(starts, pkg)
		}
	}
	var out []Reach
	for _, start := range starts {
		// Breadth first, so each package's chain is a shortest one.
		via := map[string]string{start: ""}
		queue := []string{start}
		for len(queue) > 0 {
			pkg := queue[0]
			queue = queue[1:]
			if hasPrefix(pkg, "adapters/postgres") {
				out = append(out, Reach{From: start, Chain: chainTo(pkg, via)})
				continue
			}
			next := make([]string, 0, len(imports[pkg]))
			for to := range imports[pkg] {
				next = append(next, to)
			}
			sort.Strings(next)
			for _, to := range next {
				if _, seen := via[to]; seen || (skip != nil && skip(pkg, to)) {
					continue
				}
				via[to] = pkg
				queue = append(queue, to)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// chainTo is the chain of imports from the start that led the search to pkg.
func chainTo(pkg string, via map[string]string) []string {
	var chain []string
	for p := pkg; p != ""; p = via[p] {
		chain = append([]string{p}, chain...)
	}
	return chain
}
