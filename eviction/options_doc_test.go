package eviction_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"

	"github.com/taintevict/taintevict/eviction"
)

// TestOptionsDocNamesEveryField: go doc eviction.Options shows only the alias, so its doc
// comment says in pod and node words what each field does. Each field of the engine's
// Options must be named there, as "- Name" or ", Name" at the start of an item: a field
// the engine adds shows here until it is explained.
func TestOptionsDocNamesEveryField(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "options.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range g.Specs {
			if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.Name == "Options" && g.Doc != nil {
				doc = g.Doc.Text()
			}
		}
	}
	if doc == "" {
		t.Fatal("options.go: no doc comment on Options")
	}
	var items []string // each "- A, B: ..." item's names
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if names, _, ok := strings.Cut(strings.TrimPrefix(line, "- "), ":"); ok && strings.HasPrefix(line, "- ") {
			items = append(items, strings.Split(names, ", ")...)
		}
	}
	typ := reflect.TypeFor[eviction.Options]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		found := false
		for _, item := range items {
			found = found || item == name
		}
		if !found {
			t.Errorf("eviction.Options' doc: got no item for the field %s, want one saying what it does for pods on nodes (items: %q)", name, items)
		}
	}
}
